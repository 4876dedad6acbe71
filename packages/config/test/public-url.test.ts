import { describe, expect, it } from '@jest/globals';
import { ConfigError, commonEnvShape, loadConfig, publicUrlProblem, publicUrlSetting } from '../src/index.js';

describe('publicUrlProblem', () => {
  it.each([
    'https://cairn.example.com',
    'https://cairn.example.com:8443/base/',
    'https://verify.cairn.dev/ocsp',
    'https://8.8.8.8/',
    'https://[2606:4700:4700::1111]/',
    'https://cairn.example.com./', // a fully qualified name with its root dot
  ])('passes %s', (url) => {
    expect(publicUrlProblem(url)).toBeUndefined();
  });

  it.each([
    ['http://cairn.example.com', /must be https \(it is http\)/],
    ['not a url', /is not a URL/],
    ['https://localhost:8080', /names localhost/],
    ['https://LOCALHOST./', /names localhost/],
    ['https://127.0.0.1:8080', /loopback address \(127\.0\.0\.1\)/],
    ['https://127.9.9.9', /loopback/],
    ['https://2130706433/', /loopback/], // 127.0.0.1 as one number: the URL parser normalises it
    ['https://0x7f.1/', /loopback/],
    ['https://[::1]:8080', /loopback/],
    ['https://[::ffff:127.0.0.1]/', /loopback/], // IPv4-mapped IPv6
    ['https://[::ffff:10.0.0.5]/', /private/],
    ['https://[64:ff9b::7f00:1]/', /loopback/], // NAT64 carrying 127.0.0.1: judged by @cairn/outbound's table
    ['https://[2002:a00:1::1]/', /6to4/],
    ['https://10.1.2.3', /private/],
    ['https://172.20.0.1', /private/],
    ['https://192.168.1.10', /private/],
    ['https://100.64.0.1', /CGNAT/],
    ['https://169.254.169.254', /link-local/],
    ['https://[fe80::1]', /link-local/],
    ['https://[fd12:3456::1]', /unique-local/],
    ['https://0.0.0.0', /unspecified/],
    ['https://cairn-gateway', /single-label host cairn-gateway/],
    ['https://cairn-signer.cairn.svc:9471/ocsp', /cluster-local name \(\*\.svc\)/],
    ['https://cairn-signer.cairn.svc.cluster.local/ocsp', /cluster-local name \(\*\.cluster\.local\)/],
    ['https://printer.local', /cluster-local name \(\*\.local\)/],
    ['https://cairn.corp.internal', /cluster-local name \(\*\.internal\)/],
    ['https://app.localhost', /cluster-local name \(\*\.localhost\)/],
  ])('refuses %s', (url, reason) => {
    expect(publicUrlProblem(url)).toMatch(reason);
  });
});

describe('public URL settings in loadConfig', () => {
  const shape = { ...commonEnvShape, PUBLIC_BASE_URL: publicUrlSetting('http://127.0.0.1:8080', 'the links') };

  it('take the loopback default and any URL in development', () => {
    expect(loadConfig(shape, {}).PUBLIC_BASE_URL).toBe('http://127.0.0.1:8080');
    expect(loadConfig(shape, { PUBLIC_BASE_URL: 'http://cairn.svc' }).PUBLIC_BASE_URL).toBe('http://cairn.svc');
  });

  it('refuse, in production, the default and any other non-public URL, naming the variable and why', () => {
    let caught: unknown;
    try {
      loadConfig(shape, { CAIRN_ENV: 'production' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).problems).toEqual([
      'PUBLIC_BASE_URL: http://127.0.0.1:8080 must be https (it is http); production needs a public https URL (the links)',
    ]);
    expect(() =>
      loadConfig(shape, { CAIRN_ENV: 'production', PUBLIC_BASE_URL: 'https://cairn-gateway.cairn.svc' }),
    ).toThrow(/PUBLIC_BASE_URL: .* cluster-local name/);
    expect(loadConfig(shape, { CAIRN_ENV: 'production', PUBLIC_BASE_URL: 'https://cairn.example.com' })).toMatchObject({
      PUBLIC_BASE_URL: 'https://cairn.example.com',
    });
  });
});
