import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { GrantBudget } from '../src/adapters/tsa-responder.js';
import { answerTimeStampRequest } from '../src/domain/pki/time-stamp-answer.js';
import { makeTsaHierarchy } from './external-tsa.js';
import { HASH_OIDS, readTimeStampReply, timeStampQuery } from './tsp-client.js';

// What reaches the public TSA path is anyone's bytes: every answer must be a TimeStampResp (granted or rejected),
// never a throw, whatever the request.

describe('the time-stamping authority under hostile requests', () => {
  it('answers random bytes and mutated or cut queries with a TimeStampResp, never a throw', async () => {
    const { credential: cred } = await makeTsaHierarchy('Fuzz TSA');
    const deps = { credential: async () => cred };
    const valid = timeStampQuery({
      hashOid: HASH_OIDS.sha256,
      digest: createHash('sha256').update('fuzz').digest(),
      nonce: Buffer.from('0102030405060708', 'hex'),
    });
    const mutated = fc
      .tuple(
        fc.array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
        fc.nat(valid.length),
      )
      .map(([flips, cut]) => {
        const copy = Buffer.from(valid);
        for (const [at, value] of flips) copy[at] = value;
        return copy.subarray(0, Math.max(1, cut));
      });
    // Well-formed queries for any digest and nonce: the granting path runs under the fuzz too, not only the refusals
    // (a random flip or cut leaves a query valid too rarely to count on).
    const wellFormed = fc
      .tuple(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.integer({ min: 1, max: 0x7f }),
        fc.uint8Array({ minLength: 7, maxLength: 7 }),
      )
      .map(([digest, nonceHead, nonceTail]) => ({
        wellFormed: true,
        bytes: timeStampQuery({
          hashOid: HASH_OIDS.sha256,
          digest: Buffer.from(digest),
          nonce: Buffer.concat([Buffer.from([nonceHead]), Buffer.from(nonceTail)]),
        }),
      }));
    const hostile = fc
      .oneof(
        fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
        mutated,
      )
      .map((bytes) => ({ wellFormed: false, bytes }));
    let granted = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostile, hostile, wellFormed), async ({ wellFormed, bytes }) => {
        const reply = readTimeStampReply(await answerTimeStampRequest(bytes, deps));
        expect([0, 2]).toContain(reply.status);
        if (wellFormed) expect(reply.status).toBe(0);
        if (reply.status === 0) granted += 1;
      }),
      { numRuns: 1500 },
    );
    expect(granted).toBeGreaterThan(0);
  }, 120_000);

  it('a grant budget refuses past its burst and refills at its rate', () => {
    let now = 0;
    const budget = new GrantBudget(2, () => now);
    const burst = Array.from({ length: 6 }, () => budget.take());
    expect(burst).toEqual([true, true, true, true, false, false]);
    now += 500; // half a second at 2 a second: one token back
    expect(budget.take()).toBe(true);
    expect(budget.take()).toBe(false);
    now += 60_000; // never more than the burst held
    expect(Array.from({ length: 5 }, () => budget.take())).toEqual([true, true, true, true, false]);
  });
});
