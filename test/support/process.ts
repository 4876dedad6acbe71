import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SERVICE_NODE_FLAGS, type ServiceName } from '@cairn/config';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process wrote so far, stdout and stderr interleaved. */
  output(): string;
  /** Settles when the process has exited. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Kills the process if it still runs (for afterAll, after a failed assertion). */
  kill(): void;
}

/**
 * A service run from its sources as its own process, through the same entry point (`src/main.ts`,
 * `runService`) the built bundle has: signals, exit codes and start-up refusals are the real ones. `bundle` runs
 * the built bundle instead (`services/<name>/dist/main.js`, what `npm run up` starts; build it first).
 */
export function spawnService(
  name: ServiceName,
  env: NodeJS.ProcessEnv,
  entry: 'source' | 'bundle' = 'source',
): ServiceProcess {
  // CAIRN_CPU_PROFILE_DIR=<dir> in a bench's environment: each thread of the service writes a V8 CPU profile to
  // <dir>/<service>/ when it exits on SIGTERM (docs/performance.md).
  const profileDir = process.env.CAIRN_CPU_PROFILE_DIR;
  const args = [
    ...SERVICE_NODE_FLAGS,
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}/${name}`] : []),
    ...(entry === 'bundle' ? [`services/${name}/dist/main.js`] : ['--import', 'tsx', `services/${name}/src/main.ts`]),
  ];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    exit,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
