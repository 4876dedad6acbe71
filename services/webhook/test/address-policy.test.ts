import { describe, expect, it } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isCairnError } from '@cairn/errors';
import {
  checkEndpointUrl,
  disallowedReason,
  policyFor,
  vettedLookup,
  type ResolveAll,
} from '../src/adapters/address-policy.js';
import { Sender } from '../src/adapters/sender.js';

const production = policyFor('production');
const development = policyFor('development');

describe('address vetting', () => {
  it.each([
    '10.0.0.1',
    '10.255.255.255',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.1.10',
    '127.0.0.1',
    '127.1.2.3',
    '169.254.169.254',
    '169.254.0.1',
    '100.100.100.200',
    '0.0.0.0',
    '::1',
    '::',
    'fc00::1',
    'fd00:ec2::254',
    'fdff:ffff::1',
    'fe80::1',
    'febf::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.1.2.3',
    '64:ff9b::a9fe:a9fe',
    'ff02::1',
  ])('refuses %s', (address) => {
    expect(disallowedReason(address)).toBeDefined();
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.169.0.1',
    '11.0.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
  ])('allows %s', (address) => {
    expect(disallowedReason(address)).toBeUndefined();
  });
});

describe('endpoint URLs at creation', () => {
  const refused = (url: string, policy = production) => {
    try {
      checkEndpointUrl(url, policy);
      return undefined;
    } catch (error) {
      return isCairnError(error) ? error.code : 'other';
    }
  };

  it('refuses plain http, internal addresses and names in production', () => {
    for (const url of [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://10.0.0.5/hook',
      'https://[::1]/hook',
      'https://[fd00::1]/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://localhost/hook',
      'https://metadata.google.internal/',
      'https://intranet/hook',
      'https://user:pw@example.com/hook',
      'ftp://example.com/hook',
      'not a url',
    ]) {
      expect([url, refused(url)]).toEqual([url, 'cairn.webhook.invalid_url']);
    }
    expect(refused('https://hooks.example.com/cairn')).toBeUndefined();
  });

  it('allows http and loopback in development', () => {
    expect(refused('http://127.0.0.1:9999/hook', development)).toBeUndefined();
    expect(refused('http://localhost:9999/hook', development)).toBeUndefined();
    expect(refused('ftp://example.com/', development)).toBe('cairn.webhook.invalid_url');
  });

  it('refuses private, link-local, metadata and embedded-IPv4 addresses in development too: only loopback is let in', () => {
    for (const url of [
      'http://10.0.0.5/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[fd00::1]/hook',
      'http://[::a9fe:a9fe]/hook',
      'http://[64:ff9b:1::a9fe:a9fe]/hook',
      'http://[2002:a9fe:a9fe::1]/hook',
      'http://metadata.google.internal/',
    ])
      expect([url, refused(url, development)]).toEqual([url, 'cairn.webhook.invalid_url']);
  });
});

describe('connect-time check', () => {
  const lookupOnce = (resolveAll: ResolveAll, hostname: string, all: boolean) =>
    new Promise<{ error?: Error; address: unknown }>((resolve) =>
      vettedLookup(production, resolveAll)(hostname, { all }, (error, address) =>
        resolve({ ...(error ? { error } : {}), address }),
      ),
    );

  it('refuses a name when any of its addresses is internal (DNS rebinding)', async () => {
    const resolveAll: ResolveAll = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    expect((await lookupOnce(resolveAll, 'rebind.example', true)).error?.message).toMatch(/127\.0\.0\.1.*refused/);
    const ok = await lookupOnce(async () => [{ address: '93.184.216.34', family: 4 }], 'good.example', false);
    expect(ok).toEqual({ address: '93.184.216.34' });
  });

  it('connects to the vetted address, and refuses an internal one before any byte is sent', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits += 1;
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    // A name that (for this test) resolves to loopback: the address a rebinding attacker would serve.
    const resolveAll: ResolveAll = async () => [{ address: '127.0.0.1', family: 4 }];
    try {
      const guarded = new Sender({ policy: { httpsOnly: false, blockInternal: true }, timeoutMs: 5000, resolveAll });
      const refused = await guarded.send(`http://receiver.example:${port}/hook`, '{}', {});
      expect(refused.statusCode).toBeUndefined();
      // The tenant reads this in last_error: the class of refusal, not the address the name resolved to.
      expect(refused.error).toBe('refused by the outbound address policy');
      const literal = await guarded.send(`http://127.0.0.1:${port}/hook`, '{}', {});
      expect(literal.error).toBe('refused by the outbound address policy');
      expect(hits).toBe(0);
      guarded.close();

      const open = new Sender({ policy: development, timeoutMs: 5000, resolveAll });
      const delivered = await open.send(`http://receiver.example:${port}/hook`, '{}', {});
      expect(delivered.statusCode).toBe(200);
      expect(hits).toBe(1);
      open.close();

      const httpsOnly = new Sender({
        policy: production,
        timeoutMs: 5000,
        resolveAll: async () => [{ address: '93.184.216.34', family: 4 }],
      });
      expect((await httpsOnly.send(`http://receiver.example:${port}/hook`, '{}', {})).error).toBe(
        'plain http is refused in production',
      );
      httpsOnly.close();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
