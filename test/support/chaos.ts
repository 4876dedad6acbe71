import { afterAll, beforeAll } from '@jest/globals';
import type pg from 'pg';
import sharp from 'sharp';
import type { ServiceName } from '@cairn/config';
import { multipart } from './multipart.js';
import { ServiceProcesses } from './service-processes.js';
import { onboard, type Stack } from './stack.js';

/** What a chaos test runs against: the stack, the services it kills as processes of their own, one tenant. */
export interface ChaosFleet {
  stack: Stack;
  processes: ServiceProcesses;
  tenant: { tenant_id: string; api_key: string };
  /** The sandbox's database as its owner: the proof is taken from the rows as well as from the answers. */
  admin: pg.Client;
}

/**
 * Starts `names` with `external` as real processes of their own (ServiceProcesses.startWithStack), onboards a
 * tenant on `plan` and opens an admin connection. What has started is stopped again if a later step fails.
 */
export async function startChaosFleet(
  names: ServiceName[],
  external: ServiceName[],
  overrides: NodeJS.ProcessEnv,
  plan: Parameters<typeof onboard>[1] = 'developer',
): Promise<ChaosFleet> {
  const { stack, processes } = await ServiceProcesses.startWithStack(names, external, overrides);
  let admin: pg.Client | undefined;
  try {
    const tenant = await onboard(stack, plan);
    admin = await stack.sandbox.adminClient();
    return { stack, processes, tenant, admin };
  } catch (error) {
    await stopChaosFleet({ stack, processes, admin });
    throw error;
  }
}

/**
 * One chaos fleet for a whole test file: started (startChaosFleet's arguments) in a beforeAll registered here, stopped
 * in an afterAll. Answers the fleet, whose fields are set once that beforeAll has run: read them inside tests and
 * hooks, not at load.
 */
export function chaosFleetForFile(
  names: ServiceName[],
  external: ServiceName[],
  overrides: NodeJS.ProcessEnv,
  plan: Parameters<typeof onboard>[1] = 'developer',
): ChaosFleet {
  // Filled in place, so a test file can hold the one object from load on (as it would its own `let`s).
  const fleet = {} as ChaosFleet;
  beforeAll(async () => {
    Object.assign(fleet, await startChaosFleet(names, external, overrides, plan));
  }, 240_000);
  afterAll(() => stopChaosFleet(fleet));
  return fleet;
}

/** Stops whatever part of a chaos fleet started (afterAll runs even when beforeAll failed). */
export async function stopChaosFleet(fleet: Partial<Omit<ChaosFleet, 'tenant'>>): Promise<void> {
  fleet.processes?.stopAll();
  await fleet.admin?.end();
  await fleet.stack?.stop();
}

/** A stream's `disrupt`: SIGKILLs `victim`, leaves it down for `downMs`, and starts it again. */
export function killAndRestart(processes: ServiceProcesses, victim: ServiceName, downMs = 0): () => Promise<void> {
  return async () => {
    await processes.kill9(victim);
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await processes.start(victim);
  };
}

export interface SignOutcome {
  status: number;
  asset_id?: string;
  manifest_id?: string;
  code?: string;
  /** The answer is a recorded sign's, replayed (Idempotent-Replayed: true). */
  replayed?: boolean;
  /** The Idempotency-Key and the file it was sent with (a retry sends the same). */
  key: string;
  bytes: Buffer;
}

let colour = 0;
/** A distinct small PNG each time (no two signs share content). */
export async function distinctImage(): Promise<Buffer> {
  colour += 1;
  return sharp({
    create: { width: 320, height: 256, channels: 3, background: { r: colour % 256, g: (colour * 7) % 256, b: 90 } },
  })
    .png()
    .toBuffer();
}

/** One sign through the API; a connection cut by a kill is status 0 (not a success). */
export async function signOnce(
  stack: Stack,
  apiKey: string,
  key: string = crypto.randomUUID(),
  bytes?: Buffer,
): Promise<SignOutcome> {
  bytes ??= await distinctImage();
  const res = await stack
    .request('/v1/sign', {
      method: 'POST',
      key: apiKey,
      headers: { 'idempotency-key': key },
      body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes, name: 'a.png' }),
    })
    .catch(() => undefined); // a connection cut by a kill: status 0, counted as not-a-success
  if (!res) return { status: 0, key, bytes };
  const body = (await res.json()) as { asset_id?: string; manifest_id?: string; code?: string };
  const replayed = res.headers.get('idempotent-replayed') === 'true';
  return { status: res.status, key, bytes, ...(replayed ? { replayed } : {}), ...body };
}

/**
 * Signs `count` images `concurrency` at a time; once `disruptAfter` answers are in, runs `disrupt` (a kill and
 * restart) while the stream goes on. Answers every client-visible outcome, in the order they came.
 */
export async function signStreamWith(
  stack: Stack,
  apiKey: string,
  options: { count: number; concurrency?: number; disruptAfter: number; disrupt: () => Promise<void> },
): Promise<SignOutcome[]> {
  const outcomes: SignOutcome[] = [];
  let started = 0;
  let disrupted: Promise<void> | undefined;
  const worker = async () => {
    while (started < options.count) {
      started += 1;
      outcomes.push(await signOnce(stack, apiKey));
      if (outcomes.length >= options.disruptAfter && !disrupted) disrupted = options.disrupt();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 2 }, worker));
  await disrupted;
  return outcomes;
}

/**
 * Retries a sign that did not answer 200 with its own Idempotency-Key and file, as a client should, until it does
 * (at most `attempts` times, half a second apart); `check` is shown each answer that is not 200 first (what a
 * client may be told meanwhile). Answers the last outcome.
 */
export async function retryUntilSigned(
  stack: Stack,
  apiKey: string,
  first: SignOutcome,
  check: (outcome: SignOutcome) => void,
  attempts = 40,
): Promise<SignOutcome> {
  let outcome = first;
  for (let attempt = 0; outcome.status !== 200 && attempt < attempts; attempt++) {
    check(outcome);
    await new Promise((r) => setTimeout(r, 500));
    outcome = await signOnce(stack, apiKey, outcome.key, outcome.bytes);
  }
  return outcome;
}
