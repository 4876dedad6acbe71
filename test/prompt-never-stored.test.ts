import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import sharp from 'sharp';
import { newId } from '@cairn/ids';
import { signerV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { waitFor } from '@cairn/testing';
import { onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// Uploads above 32 KiB become asynchronous jobs here (202), so both paths are reached with small images.
const SYNC_MAX = 32 * 1024;

let stack: Stack;
let admin: pg.Client;
const signerClient = (address: string) => createClient(signerV1.SignerService, address);
let signer: ReturnType<typeof signerClient>;
let tenant: { tenant_id: string; api_key: string };
let small: Buffer;
let large: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'gateway'], { SYNC_SIGN_MAX_BYTES: String(SYNC_MAX) });
  admin = await stack.sandbox.adminClient();
  signer = signerClient(String(stack.env.SIGNER_GRPC_ADDR));
  tenant = await onboard(stack, 'developer');
  const photo = await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`);
  small = await sharp(photo).resize(256, 256).jpeg({ quality: 60 }).toBuffer();
  large = await sharp(photo).resize(640, 640).jpeg({ quality: 95 }).toBuffer();
});

afterAll(async () => {
  signer.close();
  await admin.end();
  await stack.stop();
});

/** Every place the text is stored: any row of any table of any schema (text-cast, also hex for bytea), any blob file. */
async function placesHolding(text: string): Promise<string[]> {
  const found: string[] = [];
  const hex = Buffer.from(text).toString('hex');
  const { rows: tables } = await admin.query<{ schema: string; name: string }>(
    "select table_schema as schema, table_name as name from information_schema.tables where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')",
  );
  expect(tables.map((t) => `${t.schema}.${t.name}`)).toEqual(
    expect.arrayContaining(['signer.jobs', 'gateway.sign_requests', 'billing.reservations']),
  );
  for (const t of tables) {
    const { rows } = await admin.query<{ n: string }>(
      `select count(*) as n from "${t.schema}"."${t.name}" t where strpos(t::text, $1) > 0 or strpos(t::text, $2) > 0`,
      [text, hex],
    );
    if (Number(rows[0]!.n) > 0) found.push(`${t.schema}.${t.name}`);
  }
  const root = fileURLToPath(String(stack.env.BLOB_STORE_URL));
  const files = (await readdir(root, { recursive: true, withFileTypes: true }).catch(() => [])).filter((e) =>
    e.isFile(),
  );
  for (const file of files) {
    const path = join(file.parentPath, file.name);
    if ((await readFile(path).catch(() => Buffer.alloc(0))).includes(text)) found.push(path);
  }
  return found;
}

function sign(
  bytes: Buffer,
  metadata: Record<string, string>,
  order: 'metadata-first' | 'file-first',
): Promise<Response> {
  const form = new FormData();
  const file = new Blob([bytes], { type: 'image/jpeg' });
  form.append('recipe', 'image-genai-v1');
  if (order === 'metadata-first') form.append('metadata', JSON.stringify(metadata));
  form.append('asset', file, 'a.jpg');
  if (order === 'file-first') form.append('metadata', JSON.stringify(metadata));
  return stack.request('/v1/sign', {
    method: 'POST',
    key: tenant.api_key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: form,
  });
}

describe('prompt text is never stored', () => {
  it('the scan finds metadata a sign does store (so an empty scan below means something)', async () => {
    const marker = `Generator-${crypto.randomUUID()}`;
    expect(large.length).toBeGreaterThan(SYNC_MAX);
    const res = await sign(large, { generator: marker }, 'file-first');
    expect(res.status).toBe(202);
    const { job_id } = (await res.json()) as { job_id: string };
    expect(await placesHolding(marker)).toContain('signer.jobs');
    await waitFor('the control job', async () => {
      const job = (await (await stack.request(`/v1/jobs/${job_id}`, { key: tenant.api_key })).json()) as {
        status: string;
      };
      return job.status === 'done' || job.status === 'failed' ? job : undefined;
    });
  });

  it.each([
    ['sync', 'prompt', 'file-first'],
    ['sync', 'prompt', 'metadata-first'],
    ['async', 'prompt', 'file-first'],
    ['async', 'prompt', 'metadata-first'],
    ['async', 'negative_prompt', 'file-first'],
    ['async', 'Prompt', 'metadata-first'],
  ] as const)(
    'a %s sign whose metadata holds %s (%s) is a 400 at the door, and the text is nowhere',
    async (mode, field, order) => {
      const promptText = `a castle at dusk, secret ${crypto.randomUUID()}`;
      const bytes = mode === 'sync' ? small : large;
      expect(bytes.length > SYNC_MAX).toBe(mode === 'async');
      const res = await sign(bytes, { generator: 'ImageGen', [field]: promptText }, order);
      expect(res.status).toBe(400);
      const text = await res.text();
      const problem = JSON.parse(text) as { code: string; detail: string; errors: Array<{ path: string }> };
      expect(problem.code).toBe('cairn.validation.invalid_body');
      expect(problem.errors.map((e) => e.path)).toEqual([`metadata.${field}`]);
      expect(problem.detail).toContain('prompt_hash');
      expect(problem.detail).toContain('sha256:<hex>');
      expect(text).not.toContain(promptText); // the answer names the field, never echoes the value
      expect(await placesHolding(promptText)).toEqual([]);
    },
  );

  it('any field outside the spec’s list is refused too (it could carry the prompt), listing the allowed ones', async () => {
    const promptText = `a castle at dusk, secret ${crypto.randomUUID()}`;
    const res = await sign(large, { description: promptText }, 'file-first');
    expect(res.status).toBe(400);
    const problem = (await res.json()) as { code: string; detail: string; errors: Array<{ path: string }> };
    expect(problem.code).toBe('cairn.validation.invalid_body');
    expect(problem.detail).toContain('description');
    expect(problem.detail).toContain('prompt_hash');
    expect(await placesHolding(promptText)).toEqual([]);
  });

  it('the signer’s job path refuses prompt metadata itself, before a job row is written, whoever calls it', async () => {
    const promptText = `a castle at dusk, secret ${crypto.randomUUID()}`;
    const attempt = signer.enqueueSign({
      sign: {
        tenantId: tenant.tenant_id,
        assetId: newId('asset'),
        uploadBlobKey: `${tenant.tenant_id}/uploads/none`,
        metadata: { prompt: promptText },
      },
    });
    const error = await attempt.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'cairn.validation.invalid_body' });
    expect(await placesHolding(promptText)).toEqual([]);
  });

  it('a prompt_hash is accepted and signed', async () => {
    const res = await sign(
      small,
      { generator: 'ImageGen', prompt_hash: `sha256:${'ab'.repeat(32)}` },
      'metadata-first',
    );
    expect(small.length).toBeLessThanOrEqual(SYNC_MAX);
    expect(res.status).toBe(200);
  });
});
