import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ERROR_CATALOG } from '../packages/errors/src/index.js';
import { startStack, type Stack } from './support/stack.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack(['gateway']);
}, 120_000);
afterAll(() => stack?.stop());

/** The `id` attributes of the page's rows, in order. */
function anchors(html: string): string[] {
  return [...html.matchAll(/<tr id="([^"]+)"/g)].map((m) => m[1] ?? '');
}

describe('the error catalogue page /docs/api/errors', () => {
  it('has exactly one anchor per cairn.* code in the catalog, with its HTTP status, title and what to do', async () => {
    const res = await fetch(`${stack.baseUrl}/docs/api/errors`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const html = await res.text();
    expect(html).toContain('<html lang="en">');
    expect(anchors(html).sort()).toEqual(Object.keys(ERROR_CATALOG).sort());
    for (const [code, entry] of Object.entries(ERROR_CATALOG)) {
      const row = new RegExp(
        `<tr id="${code.replace(/\./g, '\\.')}">.*?<td>${entry.status}</td><td>[^<]+</td><td>([^<]{10,})</td></tr>`,
      );
      expect(html).toMatch(row);
    }
  });

  it('a real problem’s type URL (DOCS_URL unset) is the gateway’s own page, answers 200 and holds that code’s anchor', async () => {
    const res = await stack.request('/v1/usage', { key: 'ck_live_not_a_real_key' });
    expect(res.status).toBe(401);
    const problem = (await res.json()) as { type: string; code: string };
    expect(problem.code).toBe('cairn.auth.invalid_key');
    expect(problem.type).toBe(`${stack.baseUrl}/docs/api/errors#cairn.auth.invalid_key`);
    const page = await fetch(problem.type);
    expect(page.status).toBe(200);
    const fragment = new URL(problem.type).hash.slice(1);
    expect(anchors(await page.text())).toContain(fragment);
  });

  it('an unknown route’s problem resolves the same way', async () => {
    const res = await fetch(`${stack.baseUrl}/no/such/route`);
    const problem = (await res.json()) as { type: string; code: string };
    expect(problem.code).toBe('cairn.not_found');
    const page = await fetch(problem.type);
    expect(page.status).toBe(200);
    expect(anchors(await page.text())).toContain('cairn.not_found');
  });
});
