import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisSignalEpochs } from '../src/adapters/signal-epochs.js';
import { SignalCache } from '../src/app/verify/signal-cache.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const MINUTE = 60_000;
const now = Date.parse('2026-11-24T12:00:00Z');
const inOneHour = new Date(now + 60 * MINUTE);
const T1 = { revocation: 'token-1' };
const T2 = { revocation: 'token-2' };
const key = SignalCache.ocspKey('leaf pem', 'issuer pem', 'http://ocsp.example/');

describe('SignalCache: OCSP answers', () => {
  it('keeps good and revoked until min(nextUpdate, the bound), under the token in force when asked', () => {
    const cache = new SignalCache(1024 * 1024, 5 * MINUTE);
    cache.setOcsp(key, 'good', inOneHour, T1, now);
    expect(cache.getOcsp(key, T1, now + 4 * MINUTE)).toBe('good');
    // The bound (5 min) comes before nextUpdate (1 h).
    expect(cache.getOcsp(key, T1, now + 5 * MINUTE)).toBeUndefined();

    cache.setOcsp(key, 'revoked', new Date(now + MINUTE), T1, now);
    expect(cache.getOcsp(key, T1, now + MINUTE - 1)).toBe('revoked');
    // nextUpdate (1 min) comes before the bound.
    expect(cache.getOcsp(key, T1, now + MINUTE)).toBeUndefined();
  });

  it('drops an answer once the token changed (a revocation was announced), and never brings it back', () => {
    const cache = new SignalCache(1024 * 1024, 5 * MINUTE);
    cache.setOcsp(key, 'good', inOneHour, T1, now);
    expect(cache.getOcsp(key, T2, now + 1)).toBeUndefined();
    expect(cache.getOcsp(key, T1, now + 2)).toBeUndefined();
  });

  it('keeps nothing it cannot tell the end of, and no answer that is not a verdict on the certificate', () => {
    const cache = new SignalCache(1024 * 1024, 5 * MINUTE);
    cache.setOcsp(key, 'good', inOneHour, {}, now); // the token could not be read
    expect(cache.getOcsp(key, {}, now)).toBeUndefined();
    expect(cache.getOcsp(key, T1, now)).toBeUndefined();
    cache.setOcsp(key, 'good', undefined, T1, now); // no nextUpdate: "newer information is always available"
    expect(cache.getOcsp(key, T1, now)).toBeUndefined();
    for (const status of ['unavailable', 'unknown', 'not_checked'] as const) {
      cache.setOcsp(key, status, inOneHour, T1, now);
      expect(cache.getOcsp(key, T1, now)).toBeUndefined();
    }
  });

  it('keeps nothing with a bound of 0', () => {
    const cache = new SignalCache(1024 * 1024, 0);
    cache.setOcsp(key, 'good', inOneHour, T1, now);
    cache.setRecord({ assetId: 'a_1', manifestId: 'm_1' }, now);
    expect(cache.getOcsp(key, T1, now)).toBeUndefined();
    expect(cache.getRecord('a_1', now)).toBeUndefined();
  });

  it('tells certificates, issuers and responders apart', () => {
    const cache = new SignalCache(1024 * 1024, 5 * MINUTE);
    cache.setOcsp(key, 'revoked', inOneHour, T1, now);
    for (const other of [
      SignalCache.ocspKey('leaf pem 2', 'issuer pem', 'http://ocsp.example/'),
      SignalCache.ocspKey('leaf pem', 'issuer pem 2', 'http://ocsp.example/'),
      SignalCache.ocspKey('leaf pem', 'issuer pem', 'http://ocsp.example/2'),
    ])
      expect(cache.getOcsp(other, T1, now)).toBeUndefined();
  });
});

describe('SignalCache: public records and memory', () => {
  it('keeps a record until the bound, by asset id', () => {
    const cache = new SignalCache(1024 * 1024, 5 * MINUTE);
    cache.setRecord({ assetId: 'a_1', manifestId: 'm_1' }, now);
    expect(cache.getRecord('a_1', now + 1)).toEqual({ assetId: 'a_1', manifestId: 'm_1' });
    expect(cache.getRecord('a_2', now + 1)).toBeUndefined();
    expect(cache.getRecord('a_1', now + 5 * MINUTE)).toBeUndefined();
  });

  it('holds no more answers than its memory bound allows, least recently used out', () => {
    const maxBytes = 64 * 1024;
    const cache = new SignalCache(maxBytes, 5 * MINUTE);
    const count = 10_000;
    for (let i = 0; i < count; i++) cache.setRecord({ assetId: `a_${i}`, manifestId: `m_${i}` }, now);
    let kept = 0;
    for (let i = 0; i < count; i++) if (cache.getRecord(`a_${i}`, now)) kept++;
    // Every answer counts at least its fixed 256 bytes.
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(maxBytes / 256);
    expect(cache.getRecord(`a_${count - 1}`, now)).toBeDefined();
    expect(cache.getRecord('a_0', now)).toBeUndefined();
  });
});

describe('RedisSignalEpochs (real Redis): every replica converges on an event', () => {
  const prefix = `test:signal-epochs:${randomUUID()}:`;
  let one: Redis;
  let two: Redis;
  beforeAll(() => {
    one = new Redis(REDIS_URL, { keyPrefix: prefix, maxRetriesPerRequest: 1 });
    two = new Redis(REDIS_URL, { keyPrefix: prefix, maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    await one.del('verifier:signal-epoch:revocation');
    one.disconnect();
    two.disconnect();
  });

  it('gives both replicas the same token, and a new one to both after either advances it', async () => {
    const replicaOne = new RedisSignalEpochs(one);
    const replicaTwo = new RedisSignalEpochs(two);
    const first = await replicaOne.current();
    expect(first.revocation).toEqual(expect.any(String));
    expect(await replicaTwo.current()).toEqual(first);

    // Replica two keeps an answer; the event is handled by replica one's consumer.
    const cacheTwo = new SignalCache(1024 * 1024, 5 * MINUTE);
    cacheTwo.setOcsp(key, 'good', inOneHour, first, now);
    expect(cacheTwo.getOcsp(key, await replicaTwo.current(), now)).toBe('good');
    await replicaOne.advance('revocation');
    const second = await replicaTwo.current();
    expect(second.revocation).not.toBe(first.revocation);
    expect(cacheTwo.getOcsp(key, second, now)).toBeUndefined();
  });

  it('yields no token when Redis does not answer (nothing is kept or reused then)', async () => {
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    down.on('error', () => undefined);
    try {
      expect(await new RedisSignalEpochs(down).current()).toEqual({});
    } finally {
      down.disconnect();
    }
  });
});
