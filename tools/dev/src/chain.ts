import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export interface LocalChain {
  readonly url: string;
  readonly running: boolean;
  /** The last lines hardhat wrote to stderr, for a failure report. */
  readonly tail: string[];
  stop(graceMs: number): Promise<void>;
  kill(): void;
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1000),
    });
    return res.ok;
  } catch {
    return false;
  }
}

/**
 * Starts hardhat on 127.0.0.1:`port` from the repository root (hardhat.config.cjs), in its own process group and
 * with its per-request log discarded, and waits until it answers JSON-RPC. A development chain: it starts empty,
 * and anchors written to it last as long as it runs.
 */
export async function startLocalChain(root: string, port: number, timeoutMs = 30_000): Promise<LocalChain> {
  const bin = join(root, 'node_modules/.bin/hardhat');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run pnpm install`);
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(bin, ['node', '--hostname', '127.0.0.1', '--port', String(port)], {
    cwd: root,
    env: { ...process.env, HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  const tail: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    tail.push(...chunk.toString().split('\n').filter(Boolean));
    tail.splice(0, Math.max(0, tail.length - 20));
  });
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  const chain: LocalChain = {
    url,
    get running() {
      return !exited;
    },
    tail,
    stop: async (graceMs) => {
      if (exited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exit;
      clearTimeout(timer);
    },
    kill: () => {
      if (!exited) child.kill('SIGKILL');
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await answers(url))) {
    if (exited) throw new Error(`hardhat node exited during start-up: ${tail.join(' | ') || 'no output'}`);
    if (Date.now() > deadline) {
      chain.kill();
      throw new Error(`hardhat node did not answer on ${url} within ${timeoutMs / 1000} s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return chain;
}
