import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: where hardhat.config.cjs and node_modules/.bin/hardhat are. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface HardhatNode {
  readonly url: string;
  readonly port: number;
  /** JSON-RPC call (for evm_setAutomine, hardhat_dropTransaction, …). */
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
  /** A fresh chain on the same port (state is lost, as with a restarted development node). */
  restart(): Promise<void>;
}

async function call<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

/** Starts `hardhat node` (hardhat 2, chain id 31337) on 127.0.0.1:`port` and waits until it answers. */
export async function startHardhat(port: number): Promise<HardhatNode> {
  const bin = join(REPO_ROOT, 'node_modules/.bin/hardhat');
  if (!existsSync(bin)) throw new Error(`hardhat is not installed at ${bin} (pnpm install)`);
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const launch = async () => {
    // The binary itself (not npx), so the pid killed is the node's.
    const proc = spawn(bin, ['node', '--hostname', '127.0.0.1', '--port', String(port)], {
      cwd: REPO_ROOT,
      env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
      stdio: 'ignore',
    });
    child = proc;
    let exited = false;
    proc.once('exit', () => (exited = true));
    for (let i = 0; i < 600; i++) {
      if (exited) throw new Error(`hardhat node on port ${port} exited during start-up`);
      try {
        await call(url, 'eth_chainId');
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    proc.kill('SIGKILL');
    throw new Error(`hardhat node on port ${port} did not start`);
  };
  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGTERM');
    });
  };
  await launch();
  return {
    url,
    port,
    rpc: (method, params) => call(url, method, params),
    stop,
    restart: async () => (await stop(), await launch()),
  };
}
