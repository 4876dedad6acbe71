// The local fleet launcher (tools/dev/src/fleet.ts) run as a user runs it, in a process of its own: for the tests
// of the launcher itself (fleet-process.test.ts) and of the images it starts with --images (images.test.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export interface Launcher {
  child: ChildProcess;
  /** Settles when the launcher process has closed. */
  exit: Promise<Exit>;
  /** Everything the launcher has written so far, stdout and stderr interleaved. */
  output(): string;
}

/** Resolves true when nothing listens on the loopback port right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** The promise's value, or 'timeout' after `ms` (the timer never outlives the promise). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
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

/**
 * Spawns the launcher with `args` from the repository root. Returned before it is ready, so that a test's afterAll
 * can stop it even when it never gets there (`untilFleetReady`).
 */
export function spawnLauncher(args: string[], env: NodeJS.ProcessEnv): Launcher {
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/dev/src/fleet.ts', ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exit = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, exit, output: () => output };
}

/** Resolves once the launcher prints "fleet ready"; fails with its output when it exits first or `seconds` pass. */
export function untilFleetReady(launcher: Launcher, seconds: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no "fleet ready" within ${seconds} s; output:\n${launcher.output()}`)),
      seconds * 1000,
    );
    const ready = () => {
      if (!/^fleet ready$/m.test(launcher.output())) return;
      clearTimeout(timer);
      launcher.child.stdout?.off('data', ready);
      resolve();
    };
    launcher.child.stdout?.on('data', ready);
    ready();
    void launcher.exit.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(`the launcher exited (${code ?? signal}) before the fleet was ready; output:\n${launcher.output()}`),
      );
    });
  });
}

/** Stops a launcher still running: SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
export async function stopLauncher(launcher: Launcher | undefined, graceMs: number): Promise<void> {
  const child = launcher?.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  if ((await within(launcher.exit, graceMs)) === 'timeout') child.kill('SIGKILL');
}

/**
 * Sends SIGINT and returns how the launcher ended; fails with its output unless it exits within `ms`. The caller
 * asserts the exit itself.
 */
export async function interruptLauncher(launcher: Launcher, ms: number): Promise<Exit> {
  launcher.child.kill('SIGINT');
  const ended = await within(launcher.exit, ms);
  if (ended === 'timeout')
    throw new Error(`the launcher did not exit within ${ms / 1000} s of SIGINT; output:\n${launcher.output()}`);
  return ended;
}
