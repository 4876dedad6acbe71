import { expect } from '@jest/globals';
import { waitFor } from '@cairn/testing';
import { multipart, type Stack } from './stack.js';

export type LookupMatch = Record<string, unknown>;

/** `POST /v1/lookup` with a file (multipart field "file"). */
export function lookupFile(
  stack: Stack,
  key: string,
  file: { bytes: Buffer; name: string; type?: string },
): Promise<Response> {
  return stack.request('/v1/lookup', { method: 'POST', key, body: multipart({}, { field: 'file', ...file }) });
}

/** The matches of a lookup answer, which must be a 200. */
export async function matchesOf(res: Response): Promise<LookupMatch[]> {
  expect(res.status).toBe(200);
  return ((await res.json()) as { matches: LookupMatch[] }).matches;
}

/** Indexing follows asset.signed asynchronously: waits until looking the signed file up finds something. */
export async function untilIndexed(lookup: () => Promise<Response>): Promise<void> {
  await waitFor('the signed asset indexed', async () => (await matchesOf(await lookup())).length > 0, 30_000, 250);
}
