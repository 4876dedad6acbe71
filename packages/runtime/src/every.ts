/** Runs `task` now and every `intervalMs`, never two at once, logging failures; the returned function stops it (awaiting a run in progress). */
export function every(
  intervalMs: number,
  task: () => Promise<unknown>,
  onError: (error: unknown) => void,
): () => Promise<void> {
  // A tick that finds the last run still going is skipped, not queued: a task slower than its interval never
  // builds a backlog of runs that outlives the reason for them.
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= task()
      .then(() => undefined, onError)
      .finally(() => {
        running = undefined;
      });
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
