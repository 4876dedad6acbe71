import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { waitFor } from './wait.js';

/**
 * A Redis or NATS server of one test file's own, on a free port: stopping or restarting it (chaos, degraded
 * dependencies) touches no other test. `kill` is SIGKILL, what a crashed server looks like to its clients.
 */
export interface PrivateServer {
  readonly port: number;
  child: ChildProcess;
  kill(): Promise<void>;
}

export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

async function run(command: string, args: string[], port: number): Promise<PrivateServer> {
  const child = spawn(command, args, { stdio: 'ignore' });
  await waitFor(`${command} listening on ${port}`, () => listening(port), 15_000, 50);
  return {
    port,
    child,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await once(child, 'exit');
    },
  };
}

/** redis-server without persistence: a restarted one starts empty. */
export const startPrivateRedis = (port: number): Promise<PrivateServer> =>
  run('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], port);

/** nats-server with JetStream stored in `storeDir`: a restart on the same directory keeps streams and consumers. */
export const startPrivateNats = (port: number, storeDir: string): Promise<PrivateServer> =>
  run('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], port);
