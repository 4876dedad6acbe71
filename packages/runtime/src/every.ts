/** Runs `task` now and every `intervalMs`, never two at once, logging failures; the returned function stops it (awaiting a run in progress). */
export function every(
  intervalMs: number,
  task: () => Promise<unknown>,
  onError: (error: unknown) => void,
): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    running = running.then(task).catch(onError);
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
