// The local fleet launcher (tools/dev/src/fleet.ts) run as a user runs it, in a process of its own: for the tests
// of the launcher itself (fleet-process.test.ts) and of the images it starts with --images (images.test.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** The promise's value, or 'timeout' after `ms` (the timer never outlives the promise). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export class Launcher {
  private written = '';
  /** Settles when the launcher process has closed. */
  readonly exit: Promise<Exit>;

  private constructor(readonly child: ChildProcess) {
    this.exit = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
    child.stdout?.on('data', (chunk: Buffer) => (this.written += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.written += chunk.toString()));
  }

  /**
   * Spawns the launcher with `args` from the repository root. Returned before it is ready, so that a test's
   * afterAll can stop it even when it never gets there (`untilReady`).
   */
  static spawn(args: string[], env: NodeJS.ProcessEnv): Launcher {
    const child = spawn(process.execPath, ['--import', 'tsx', 'tools/dev/src/fleet.ts', ...args], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new Launcher(child);
  }

  /** Everything the launcher has written so far, stdout and stderr interleaved. */
  output(): string {
    return this.written;
  }

  /** Resolves once the launcher prints "fleet ready"; fails with its output when it exits first or `seconds` pass. */
  untilReady(seconds: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no "fleet ready" within ${seconds} s; output:\n${this.written}`)),
        seconds * 1000,
      );
      const ready = () => {
        if (!/^fleet ready$/m.test(this.written)) return;
        clearTimeout(timer);
        this.child.stdout?.off('data', ready);
        resolve();
      };
      this.child.stdout?.on('data', ready);
      ready();
      void this.exit.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(
          new Error(`the launcher exited (${code ?? signal}) before the fleet was ready; output:\n${this.written}`),
        );
      });
    });
  }

  /** Stops the launcher if it still runs: SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    if ((await within(this.exit, graceMs)) === 'timeout') this.child.kill('SIGKILL');
  }

  /** Sends SIGINT and answers how the launcher ended; fails with its output unless it exits within `ms`. */
  async interrupt(ms: number): Promise<Exit> {
    this.child.kill('SIGINT');
    const ended = await within(this.exit, ms);
    if (ended === 'timeout')
      throw new Error(`the launcher did not exit within ${ms / 1000} s of SIGINT; output:\n${this.written}`);
    return ended;
  }
}
