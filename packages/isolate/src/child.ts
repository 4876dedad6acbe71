// The child side of a WorkerPool: one task at a time, answered by `handler`. Import this only in a child entry.
import { isParentMessage, type ChildMessage } from './protocol.js';

export interface TaskContext {
  /** Asks the parent (its `onCall` for this task) and waits for the answer; rejects with the parent's error message. */
  call(payload: unknown): Promise<unknown>;
}

function send(message: ChildMessage): void {
  process.send?.(message);
}

/**
 * Serves tasks until the parent goes away. `warmup` runs before `ready` is reported (load a native addon now,
 * so the first task's time budget is spent on the task).
 */
export function serveTasks(
  handler: (payload: unknown, context: TaskContext) => Promise<unknown>,
  warmup?: () => Promise<void>,
): void {
  const pendingCalls = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  let nextCallId = 1;
  process.on('message', (message: unknown) => {
    if (!isParentMessage(message)) return;
    if (message.type === 'call-result') {
      const pending = pendingCalls.get(message.callId);
      pendingCalls.delete(message.callId);
      if (!pending) return;
      if (message.ok) pending.resolve(message.value);
      else pending.reject(new Error(message.message));
      return;
    }
    const id = message.id;
    const context: TaskContext = {
      call: (payload) =>
        new Promise((resolve, reject) => {
          const callId = nextCallId++;
          pendingCalls.set(callId, { resolve, reject });
          send({ type: 'call', id, callId, payload });
        }),
    };
    handler(message.payload, context).then(
      (value) => send({ type: 'done', id, value }),
      (error: unknown) =>
        send({
          type: 'failed',
          id,
          name: error instanceof Error ? error.name : 'Error',
          message: error instanceof Error ? error.message : String(error),
        }),
    );
  });
  // Without the parent there is nobody to answer; do not linger as an orphan.
  process.on('disconnect', () => process.exit(0));
  // A failed warm-up only costs the first job its cold start; that job meets (and reports) the same failure.
  void (warmup ? warmup().catch(() => undefined) : Promise.resolve()).finally(() => send({ type: 'ready' }));
}
