import { describe, expect, it } from '@jest/globals';
import { gatewayForFile, problemOf } from './support/gateway.js';

const gw = gatewayForFile();

function expectShape(problem: Awaited<ReturnType<typeof problemOf>>, res: Response, status: number, code: string) {
  expect(problem).toMatchObject({
    // DOCS_URL defaults to the gateway's own /docs, which serves the catalogue (test/error-docs.test.ts).
    type: `http://127.0.0.1:8080/docs/api/errors#${code}`,
    title: expect.any(String),
    status,
    detail: expect.any(String),
    code,
    request_id: expect.stringMatching(/^req_[0-9A-Z]{26}$/),
  });
  expect(res.status).toBe(status);
  expect(res.headers.get('x-request-id')).toBe(problem.request_id);
}

it('an idle connection is kept longer than the 60 s idle timeout of the proxies in front (advertised to the client)', async () => {
  const res = await gw.request('/v1/no-such-thing');
  await res.arrayBuffer();
  expect(res.headers.get('connection')).toBe('keep-alive');
  expect(res.headers.get('keep-alive')).toBe('timeout=65');
});

describe('every error is RFC 7807 Problem+JSON with a cairn code and the request id', () => {
  it('unknown route → 404 cairn.not_found', async () => {
    const res = await gw.request('/v1/no-such-thing');
    expectShape(await problemOf(res), res, 404, 'cairn.not_found');
  });

  it('unknown route, even with a key → 404', async () => {
    const res = await gw.request('/v2/recipes', { key: gw.admin.api_key });
    expectShape(await problemOf(res), res, 404, 'cairn.not_found');
  });

  // Bodies the admin's key-minting endpoint refuses, each with its status and code.
  it.each([
    {
      name: 'malformed JSON → 400 cairn.validation.invalid_body',
      body: { headers: { 'content-type': 'application/json' }, body: '{"scope": "sign",' },
      status: 400,
      code: 'cairn.validation.invalid_body',
    },
    {
      name: 'oversize body → 413 cairn.validation.body_too_large',
      body: { json: { scope: 'sign', description: 'x'.repeat(2 * 1024 * 1024) } },
      status: 413,
      code: 'cairn.validation.body_too_large',
    },
    {
      name: 'non-JSON body on a JSON endpoint → 415',
      body: { headers: { 'content-type': 'text/plain' }, body: 'scope=sign' },
      status: 415,
      code: 'cairn.validation.unsupported_media_type',
    },
  ])('$name', async ({ body, status, code }) => {
    const res = await gw.request(`/v1/tenants/${gw.admin.tenant_id}/keys`, {
      method: 'POST',
      key: gw.admin.api_key,
      ...body,
    });
    expectShape(await problemOf(res), res, status, code);
  });

  it('a JSON array where an object belongs → 400', async () => {
    const res = await gw.request('/v1/onboard', {
      method: 'POST',
      headers: { 'idempotency-key': 'abcdefgh-1' },
      json: [1, 2, 3],
    });
    expectShape(await problemOf(res), res, 400, 'cairn.validation.invalid_body');
  });

  it('bad query parameter → 400', async () => {
    const res = await gw.request(`/v1/tenants/${gw.admin.tenant_id}/keys?limit=5000`, { key: gw.admin.api_key });
    expectShape(await problemOf(res), res, 400, 'cairn.validation.invalid_body');
  });

  it('missing key → 401, scope → 403, each with a request id that differs per request', async () => {
    const a = await gw.request('/v1/recipes');
    const b = await gw.request('/v1/recipes');
    const pa = await problemOf(a);
    expectShape(pa, a, 401, 'cairn.auth.invalid_key');
    expect((await problemOf(b)).request_id).not.toBe(pa.request_id);
  });

  it('no answer may be sniffed into another type: nosniff on JSON, problems and the error catalogue page alike', async () => {
    const answers = await Promise.all([
      gw.request('/v1/recipes', { key: gw.admin.api_key }),
      gw.request('/v1/no-such-thing'),
      gw.request('/v1/recipes'),
      gw.request('/docs/api/errors'),
    ]);
    for (const res of answers) expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('successful answers carry X-Request-Id too', async () => {
    const res = await gw.request('/v1/recipes', { key: gw.admin.api_key });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });
});
