import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { Reader } from '@contentauth/c2pa-node';
import { expectFirstMatch, lookupFile, matchesOf, untilIndexed } from './support/lookup.js';
import { multipart, onboard, startStack, type Stack, postSign } from './support/stack.js';

const TEXTS = new URL('../services/softbinding/test/fixtures/text/', import.meta.url).pathname;
let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let other: { tenant_id: string; api_key: string };
let passage: string;
let signed: { asset_id: string; manifest_id: string; manifest_uri: string; media_type: string; watermark_id?: string };

/** Re-wrapped at 60 columns and every tenth word replaced: the kind of edit a copy-paste-and-tweak makes. */
function nearDuplicate(text: string): string {
  const words = text
    .split(/\s+/)
    .filter(Boolean)
    .map((w, i) => (i % 10 === 9 ? 'altered' : w));
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line.length + w.length + 1 > 60) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  lines.push(line);
  return lines.join('\n');
}

function lookup(text: string, key: string) {
  return lookupFile(stack, key, { bytes: Buffer.from(text, 'utf8'), name: 'q.txt', type: 'text/plain' });
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway']);
  owner = await onboard(stack);
  other = await onboard(stack);
  passage = await readFile(`${TEXTS}moby-dick.txt`, 'utf8');
  const res = await postSign(stack, owner.api_key, {
    recipe: 'text-genai-v1',
    metadata: { generator: 'Cairn Text Studio', model: 'lm-1' },
    bytes: Buffer.from(passage, 'utf8'),
    name: 'gen.txt',
    type: 'text/plain',
  });
  if (res.status !== 200) throw new Error(`sign: ${res.status} ${await res.text()}`);
  signed = (await res.json()) as typeof signed;
  await untilIndexed(() => lookup(passage, owner.api_key));
}, 120_000);
afterAll(() => stack?.stop());

describe('text: a generation event signed with a sidecar manifest, then found when edited', () => {
  it('does not meter authenticated text verifies, by asset id or by upload (the spec has no meter for them)', async () => {
    const usage = async () =>
      (
        (await (await stack.request('/v1/usage', { key: owner.api_key })).json()) as {
          meters: Record<string, { used: number }>;
        }
      ).meters;
    const before = await usage();
    const byId = await stack.request('/v1/verify', {
      method: 'POST',
      key: owner.api_key,
      json: { asset_id: signed.asset_id },
    });
    const byUpload = await stack.request('/v1/verify', {
      method: 'POST',
      key: owner.api_key,
      body: multipart({}, { field: 'file', bytes: Buffer.from(passage, 'utf8'), name: 'copy.txt', type: 'text/plain' }),
    });
    expect([byId.status, byUpload.status]).toEqual([200, 200]);
    expect(((await byUpload.json()) as { status: string }).status).toBe('verified_manifest');
    expect(await usage()).toEqual(before);
    // The reading is live: a metered call made now shows up, so "unchanged" above is not a stale answer.
    expect((await lookup(passage, owner.api_key)).status).toBe(200);
    expect((await usage()).lookup?.used).toBe((before.lookup?.used ?? 0) + 1);
  });

  it('verifies by asset id against its sidecar manifest', async () => {
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      key: owner.api_key,
      json: { asset_id: signed.asset_id },
    });
    expect(res.status).toBe(200);
    const verdict = (await res.json()) as {
      status: string;
      signals: Record<string, unknown>;
      claims: Record<string, unknown>;
    };
    expect(verdict.status).toBe('verified_manifest');
    expect(verdict.signals).toMatchObject({
      c2pa_manifest_present: true,
      c2pa_signature_valid: true,
      signer_trusted: true,
    });
    expect(verdict.claims).toMatchObject({ generator: 'Cairn Text Studio', model: 'lm-1' });
  });

  it('verifies an uploaded exact copy against its sidecar manifest, with no key', async () => {
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      body: multipart(
        {},
        { field: 'file', bytes: Buffer.from(passage, 'utf8'), name: 'pasted.txt', type: 'text/plain' },
      ),
    });
    const verdict = (await res.json()) as {
      status: string;
      signals: Record<string, unknown>;
      claims: Record<string, unknown>;
    };
    expect(verdict.status).toBe('verified_manifest');
    expect(verdict.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
    expect(verdict.claims).toMatchObject({ generator: 'Cairn Text Studio' });
    expect(JSON.stringify(verdict)).not.toContain(owner.tenant_id);
  });

  it('answers an uploaded edited copy with fingerprint_match_only, and a too-short text without blaming a service', async () => {
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      key: owner.api_key,
      body: multipart(
        {},
        { field: 'file', bytes: Buffer.from(nearDuplicate(passage), 'utf8'), name: 'c.txt', type: 'text/plain' },
      ),
    });
    const verdict = (await res.json()) as { status: string; matches: Array<Record<string, unknown>> };
    expect(verdict.status).toBe('fingerprint_match_only');
    expect(verdict.matches[0]).toMatchObject({ asset_id: signed.asset_id });
    const short = await stack.request('/v1/verify', {
      method: 'POST',
      body: multipart(
        {},
        { field: 'file', bytes: Buffer.from('Just a line.', 'utf8'), name: 's.txt', type: 'text/plain' },
      ),
    });
    expect(short.status).toBe(200);
    expect(((await short.json()) as { status: string }).status).not.toBe('inconclusive');
  });

  it('keeps the text byte for byte and binds it with a sidecar manifest that C2PA tools validate', async () => {
    expect(signed.media_type).toBe('text/plain');
    const asset = Buffer.from(
      await (await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: owner.api_key })).arrayBuffer(),
    );
    expect(asset.toString('utf8')).toBe(passage);
    const manifestRes = await stack.request(`/v1/manifests/${signed.manifest_id}`);
    expect(manifestRes.status).toBe(200);
    const store = Buffer.from(await manifestRes.arrayBuffer());
    const reading = (
      await Reader.fromManifestDataAndAsset(store, { buffer: asset, mimeType: 'text/plain' })
    ).json() as { validation_status?: Array<{ code: string }> };
    // Cairn's dev CA is not in c2pa-rs's default trust list; everything else must validate.
    expect(
      (reading.validation_status ?? []).map((s) => s.code).filter((c) => c !== 'signingCredential.untrusted'),
    ).toEqual([]);
    const edited = Buffer.from(`${passage} (edited)`, 'utf8');
    const tampered = (
      await Reader.fromManifestDataAndAsset(store, { buffer: edited, mimeType: 'text/plain' })
    ).json() as { validation_status?: Array<{ code: string }> };
    expect((tampered.validation_status ?? []).map((s) => s.code)).toContain('assertion.dataHash.mismatch');
    // Its public page exists like any asset's.
    const page = await stack.request(`/v/${signed.asset_id}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(signed.asset_id);
  });

  it('finds the signed text from a re-wrapped copy with every tenth word changed', async () => {
    const matches = await matchesOf(await lookup(nearDuplicate(passage), owner.api_key));
    expect(matches).toHaveLength(1);
    expect(expectFirstMatch(matches, signed, 'cairn.minhash.v1').similarity as number).toBeGreaterThanOrEqual(0.3);
  });

  it('does not find a different text, and never another tenant’s', async () => {
    const different = await readFile(`${TEXTS}walden.txt`, 'utf8');
    expect(await matchesOf(await lookup(different, owner.api_key))).toEqual([]);
    expect(await matchesOf(await lookup(passage, other.api_key))).toEqual([]);
  });

  it('refuses text too short to fingerprint, and text that is not UTF-8, with clear 400s', async () => {
    const short = await lookup('A short line of generated text.', owner.api_key);
    expect(short.status).toBe(400);
    expect(((await short.json()) as { detail: string }).detail).toMatch(/too short/);
    const latin1 = Buffer.from(`${passage} caf\u00e9`, 'latin1');
    const res = await postSign(stack, owner.api_key, {
      recipe: 'text-genai-v1',
      bytes: latin1,
      name: 'l.txt',
      type: 'text/plain',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/UTF-8|recognised/);
  });
});
