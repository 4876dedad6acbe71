import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { boundedRequest, type DestinationPolicy, type ResolveAll } from '../src/index.js';

const PUBLIC_ONLY: DestinationPolicy = { httpsOnly: false, blockInternal: true };
const LOOPBACK_OK: DestinationPolicy = { httpsOnly: false, blockInternal: true, allowLoopback: true };

let server: Server;
let base: string;
let hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    req.resume();
    if (req.url === '/redirect') return void res.writeHead(302, { location: `${base}/target` }).end();
    if (req.url === '/big') return void res.writeHead(200).end(Buffer.alloc(10_000, 1));
    if (req.url === '/silent') return; // never answers
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const get = (
  path: string,
  policy: DestinationPolicy,
  extra: { timeoutMs?: number; maxBytes?: number; resolveAll?: ResolveAll } = {},
) =>
  boundedRequest(`${base}${path}`, {
    method: 'GET',
    timeoutMs: extra.timeoutMs ?? 2000,
    maxBytes: extra.maxBytes ?? 1024,
    policy,
    ...(extra.resolveAll ? { resolveAll: extra.resolveAll } : {}),
  });

describe('boundedRequest', () => {
  it('refuses loopback under the public-only policy without connecting', async () => {
    hits = [];
    const answer = await get('/ok', PUBLIC_ONLY);
    // The tenant who named it is told the class of refusal, not the address.
    expect(answer).toEqual({ ok: false, error: 'refused by the outbound address policy' });
    expect(hits).toEqual([]);
  });

  it('reaches loopback only when the policy allows it', async () => {
    const answer = await get('/ok', LOOPBACK_OK);
    expect(answer.ok && answer.status === 200 && answer.body.toString()).toBe('ok');
  });

  it('vets resolved addresses: a name that resolves to a private or metadata address is refused', async () => {
    for (const address of [
      '10.0.0.7',
      '169.254.169.254',
      '::ffff:192.168.1.1',
      '::a9fe:a9fe',
      '64:ff9b:1::a9fe:a9fe',
      '2002:a9fe:a9fe::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    ]) {
      const resolveAll: ResolveAll = async () => [{ address, family: address.includes(':') ? 6 : 4 }];
      const answer = await boundedRequest('http://responder.example/ocsp', {
        method: 'GET',
        timeoutMs: 2000,
        maxBytes: 1024,
        policy: LOOPBACK_OK,
        resolveAll,
      });
      expect(answer).toEqual({ ok: false, error: 'refused by the outbound address policy' });
    }
  });

  it('tells a caller why a connection failed without naming the host or address', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const answer = await boundedRequest(`http://127.0.0.1:${closed}/`, {
      method: 'GET',
      timeoutMs: 2000,
      maxBytes: 1024,
      policy: LOOPBACK_OK,
    });
    expect(answer).toEqual({ ok: false, error: 'connection refused' });
    const unresolved = await boundedRequest('http://internal-billing.example/', {
      method: 'GET',
      timeoutMs: 2000,
      maxBytes: 1024,
      policy: LOOPBACK_OK,
      resolveAll: async () => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND internal-billing.example'), { code: 'ENOTFOUND' });
      },
    });
    expect(unresolved).toEqual({ ok: false, error: 'the host name does not resolve' });
  });

  it('never follows a redirect', async () => {
    hits = [];
    const answer = await get('/redirect', LOOPBACK_OK);
    expect(answer.ok && answer.status).toBe(302);
    expect(hits).toEqual(['/redirect']);
  });

  it('caps the answer and the time', async () => {
    expect(await get('/big', LOOPBACK_OK, { maxBytes: 1000 })).toEqual({ ok: false, error: 'answer too large' });
    expect(await get('/silent', LOOPBACK_OK, { timeoutMs: 200 })).toEqual({
      ok: false,
      error: 'no answer within 200 ms',
    });
  });

  it('fetches no other scheme and no URL with credentials', async () => {
    expect(
      (await boundedRequest('file:///etc/passwd', { method: 'GET', timeoutMs: 500, maxBytes: 10, policy: LOOPBACK_OK }))
        .ok,
    ).toBe(false);
    expect(
      (
        await boundedRequest(`http://user:pw@127.0.0.1:1/`, {
          method: 'GET',
          timeoutMs: 500,
          maxBytes: 10,
          policy: LOOPBACK_OK,
        })
      ).ok,
    ).toBe(false);
  });
});
