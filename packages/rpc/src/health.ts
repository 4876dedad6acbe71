import { EventEmitter, on } from 'node:events';
import { CairnError } from '@cairn/errors';
import { healthV1 } from '@cairn/proto';
import type { ImplOf } from './server.js';

const { HealthCheckResponse_ServingStatus: ServingStatus } = healthV1;
type ServingStatus = healthV1.HealthCheckResponse_ServingStatus;

/**
 * grpc.health.v1: the empty service name stands for the whole server. A service marks itself SERVING when
 * ready and NOT_SERVING when it starts draining, so load balancers stop sending before it stops.
 */
export class HealthState {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly changes = new EventEmitter();
  private readonly closing = new AbortController();

  set(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    this.changes.emit('change', service, status);
  }

  setAll(status: ServingStatus): void {
    for (const service of this.statuses.keys()) this.set(service, status);
  }

  /**
   * Ends every Watch stream once it has sent the statuses already set. A watcher never hangs up by itself, and
   * the server's drain waits for every open call: without this, one watcher holds a drain to its grace period.
   */
  endWatches(): void {
    this.closing.abort();
  }

  get(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  impl(): ImplOf<typeof healthV1.Health> {
    return {
      check: async (request) => {
        const status = this.statuses.get(request.service);
        if (status === undefined) throw new CairnError('cairn.not_found', `Unknown service "${request.service}"`);
        return { status };
      },
      watch: (request, ctx) => this.watch(request.service, ctx.signal),
    };
  }

  private async *watch(service: string, callSignal: AbortSignal): AsyncIterable<{ status: ServingStatus }> {
    let last = this.statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN;
    yield { status: last };
    if (this.closing.signal.aborted) return;
    // events.on hands out the changes already queued before it honours the abort: NOT_SERVING still goes out.
    const signal = AbortSignal.any([callSignal, this.closing.signal]);
    try {
      for await (const [changed, status] of on(this.changes, 'change', { signal }) as AsyncIterable<
        [string, ServingStatus]
      >) {
        if (changed === service && status !== last) {
          last = status;
          yield { status };
        }
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    }
  }
}

export { ServingStatus };
