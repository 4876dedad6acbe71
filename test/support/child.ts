import { spawn } from 'node:child_process';

/** What a command run as a child process left: its exit code and its output. */
export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` in `cwd` with exactly `env`, `input` on its stdin; settles when it exits. */
export function runChild(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string },
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env, cwd: options.cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}
