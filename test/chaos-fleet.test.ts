/**
 * Chaos for the rest of the fleet: softbinding, watermark, verifier and tenant, each a real
 * process of its own, SIGKILLed in the middle of a short stream and started again (one stack for the whole file;
 * the gateway runs as a process too, not killed here yet: docs/testing.md; the signer, billing, audit and anchor
 * run in this process). The proof is taken through the public API: the answers the clients got while the victim
 * was down, and what works after its restart.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ServiceName } from '@cairn/config';
import { waitFor } from '@cairn/testing';
import {
  killAndRestart,
  signOnce,
  signStreamWith,
  startChaosFleet,
  stopChaosFleet,
  type ChaosFleet,
  type SignOutcome,
} from './support/chaos.js';
import { lookupFile, matchesOf } from './support/lookup.js';
import type { ServiceProcesses } from './support/service-processes.js';
import { multipart, type Stack } from './support/stack.js';

const STREAM = 10;
const VICTIMS: ServiceName[] = ['tenant', 'watermark', 'softbinding', 'verifier', 'gateway'];
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let processes: ServiceProcesses;
let fleet: ChaosFleet | undefined;

beforeAll(async () => {
  fleet = await startChaosFleet(
    ['gateway', 'signer', 'verifier', 'watermark', 'softbinding', 'tenant', 'billing', 'audit'],
    VICTIMS,
    {
      SIGN_CONCURRENCY_PER_TENANT: '100',
      // Nine services share the machine's Postgres with other suites: a small pool each (streams are 2 wide).
      DATABASE_POOL_MAX: '4',
    },
    'growth',
  );
  ({ stack, processes, tenant } = fleet);
}, 240_000);

afterAll(() => stopChaosFleet(fleet ?? {}));

/** Signs STREAM images two at a time; after the fourth answer, SIGKILLs `victim` and starts it again. */
function streamWithKill(victim: ServiceName): Promise<SignOutcome[]> {
  return signStreamWith(stack, tenant.api_key, {
    count: STREAM,
    disruptAfter: 4,
    disrupt: killAndRestart(processes, victim),
  });
}

/** A failure the client can act on: an RFC 7807 problem with a `cairn.*` code, never a bare 500. */
function expectCleanFailure(outcome: { status: number; code?: string }): void {
  expect({ status: outcome.status, code: outcome.code }).toMatchObject({
    status: 503,
    code: expect.stringMatching(/^cairn\./),
  });
}

async function download(assetId: string): Promise<Buffer> {
  const res = await stack.request(`/v1/assets/${assetId}/content`, { key: tenant.api_key });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

async function verify(bytes: Buffer): Promise<{ httpStatus: number; status?: string; code?: string }> {
  // Authenticated: the public verify's per-address limit (10 a minute) would refuse a stream of them.
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    key: tenant.api_key,
    body: multipart({}, { field: 'file', bytes, name: 'signed.png' }),
  });
  const body = (await res.json()) as { status?: string; code?: string };
  return { httpStatus: res.status, ...body };
}

/** A sign after the restart answers 200 and its download verifies with manifest and watermark matching. */
async function expectSignAndVerifyWork(): Promise<void> {
  const after = await signOnce(stack, tenant.api_key);
  expect(after.status).toBe(200);
  const verdict = await verify(await download(after.asset_id!));
  expect(verdict).toMatchObject({ httpStatus: 200, status: 'verified_manifest_and_watermark_match' });
}

describe('kill -9 in the middle of a stream, the rest of the fleet', () => {
  it('softbinding, killed while asset.signed events are indexed: every signed asset is found once by its own file', async () => {
    const outcomes = await streamWithKill('softbinding');
    // Indexing follows asset.signed: the soft-binding service is not on the sign path.
    expect(outcomes.map((o) => o.status)).toEqual(outcomes.map(() => 200));
    for (const o of outcomes) {
      const file = { bytes: await download(o.asset_id!), name: 'signed.png', type: 'image/png' };
      const own = await waitFor(
        `${o.asset_id} indexed`,
        async () => {
          const found = (await matchesOf(await lookupFile(stack, tenant.api_key, file))).filter(
            (m) => m.asset_id === o.asset_id,
          );
          return found.length > 0 ? found : undefined;
        },
        60_000,
        250,
      );
      // Indexed once: an event redelivered after the kill did not add a second record of the asset.
      expect(own).toHaveLength(1);
    }
  }, 180_000);

  it('watermark, killed mid-stream of signs: each sign answers 200 or a clean problem; signs verify after restart', async () => {
    const outcomes = await streamWithKill('watermark');
    for (const o of outcomes) if (o.status !== 200) expectCleanFailure(o);
    if (process.env.CHAOS_REPORT) console.log(outcomes.map((o) => `${o.status} ${o.code ?? ''}`).join(', '));
    await expectSignAndVerifyWork();
  }, 180_000);

  it('verifier, killed mid-stream of verifies: each answers a verdict or a clean 503 problem; verifies work after restart', async () => {
    const signed = await signOnce(stack, tenant.api_key);
    expect(signed.status).toBe(200);
    const file = await download(signed.asset_id!);
    const answers: Array<{ httpStatus: number; status?: string; code?: string }> = [];
    let killed: Promise<void> | undefined;
    const worker = async () => {
      while (answers.length < STREAM) {
        answers.push(await verify(file));
        if (answers.length >= 4 && !killed)
          killed = (async () => {
            await processes.kill9('verifier');
            await processes.start('verifier');
          })();
      }
    };
    await Promise.all([worker(), worker()]);
    await killed;
    for (const a of answers) {
      if (a.httpStatus === 200) expect(a.status).toBe('verified_manifest_and_watermark_match');
      else expectCleanFailure({ status: a.httpStatus, ...(a.code ? { code: a.code } : {}) });
    }
    if (process.env.CHAOS_REPORT) console.log(answers.map((a) => `${a.httpStatus} ${a.code ?? ''}`).join(', '));
    expect(await verify(file)).toMatchObject({ httpStatus: 200, status: 'verified_manifest_and_watermark_match' });
  }, 180_000);

  it('tenant, killed: authenticated requests answer from the auth cache or a clean 503 while it is down, and work after restart', async () => {
    await processes.kill9('tenant');
    const whileDown: SignOutcome[] = [];
    for (let i = 0; i < 4; i++) whileDown.push(await signOnce(stack, tenant.api_key));
    // Usage goes through billing, which asks the tenant service for the plan: a second path that depends on it.
    const usage = await stack.request('/v1/usage', { key: tenant.api_key });
    const used = { status: usage.status, ...((await usage.json()) as { code?: string }) };
    for (const answer of [...whileDown, used]) if (answer.status !== 200) expectCleanFailure(answer);
    if (process.env.CHAOS_REPORT)
      console.log([...whileDown, used].map((a) => `${a.status} ${a.code ?? ''}`).join(', '));
    await processes.start('tenant');
    // Nobody touches the fleet: the gateway reaches the new process on its own.
    await expectSignAndVerifyWork();
    expect((await stack.request('/v1/usage', { key: tenant.api_key })).status).toBe(200);
  }, 180_000);
});
