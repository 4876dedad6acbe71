import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { type Bus } from '@cairn/bus';
import { connectBus } from './support/events.js';
import { newId } from '@cairn/ids';
import { waitFor, sampleEvent } from '@cairn/testing';
import { onboard, startStack, type Stack } from './support/stack.js';
import { s3rverBucket } from './support/s3.js';

// Continuous export: 2-second windows, written as soon as they close, to s3rver and to a directory.
const KEY = /^(?:[\w./=-]+\/)?year=\d{4}\/month=\d{2}\/day=\d{2}\/\d{6}-\d{6}\.ndjson$/;
let stack: Stack;
let bus: Bus;
let admin: pg.Client;
let s3rver: S3rver;
let s3Dir: string;
let exportDir: string;
let s3: S3Client;
let endpoint: string;

beforeAll(async () => {
  s3Dir = await mkdtemp(join(tmpdir(), 'cairn-audit-s3rver-'));
  exportDir = await mkdtemp(join(tmpdir(), 'cairn-audit-export-'));
  s3rver = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Dir });
  const { port } = await s3rver.run();
  endpoint = `http://127.0.0.1:${port}`;
  s3 = await s3rverBucket(endpoint, 'audit-exports');
  stack = await startStack(['gateway', 'audit'], {
    AUDIT_EXPORT_WINDOW_SECONDS: '2',
    AUDIT_EXPORT_GRACE_SECONDS: '0',
    AUDIT_EXPORT_INTERVAL_MS: '200',
    AUDIT_EXPORT_DIR: exportDir,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  });
  bus = await connectBus(stack.env);
  admin = await stack.sandbox.adminClient();
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await bus?.close();
  await stack?.stop();
  s3?.destroy();
  await s3rver?.close();
  await rm(s3Dir, { recursive: true, force: true });
  await rm(exportDir, { recursive: true, force: true });
});

async function enterprise(): Promise<{ tenant_id: string; api_key: string }> {
  const tenant = await onboard(stack, 'free');
  await admin.query(`update tenant.tenants set plan = 'enterprise' where tenant_id = $1`, [tenant.tenant_id]);
  return tenant;
}

type Line = {
  entry_id: string;
  event_id: string;
  event_type: string;
  seq: number;
  hash: string;
  prev_hash: string;
  data: Record<string, unknown>;
};
const parse = (body: string): Line[] =>
  body
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line);

async function s3Files(prefix: string): Promise<Map<string, string>> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'audit-exports', Prefix: prefix }));
  const files = new Map<string, string>();
  for (const object of listed.Contents ?? []) {
    const got = await s3.send(new GetObjectCommand({ Bucket: 'audit-exports', Key: object.Key! }));
    files.set(object.Key!, (await got.Body?.transformToString()) ?? '');
  }
  return files;
}

async function publish(tenantId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const event = sampleEvent('asset.signed', tenantId, { asset_id: newId('asset'), 'billing.meter': 'image_sign' });
    ids.push(event.event_id);
    await bus.publish(event);
  }
  return ids;
}

async function exportedUntil(tenantId: string): Promise<number> {
  const { rows } = await admin.query<{ exported_until: Date }>(
    `select exported_until from audit.export_configs where tenant_id = $1`,
    [tenantId],
  );
  return rows[0]!.exported_until.getTime();
}

const exportedEventIds = (files: Map<string, string>) =>
  [...files.values()].flatMap((body) => parse(body).map((l) => l.event_id));

describe('continuous audit export', () => {
  it('is for enterprise admins only and validates its body', async () => {
    const developer = await onboard(stack, 'free');
    const refused = await stack.request('/v1/audit/export', {
      method: 'PUT',
      key: developer.api_key,
      json: { sink: 'filesystem' },
    });
    expect(refused.status).toBe(403);
    const ent = await enterprise();
    for (const json of [
      { sink: 'ftp' },
      { sink: 's3' },
      { sink: 'filesystem', path: '../escape' },
      { sink: 's3', bucket: 'ok-bucket', role_arn: 'nope' },
    ]) {
      const res = await stack.request('/v1/audit/export', { method: 'PUT', key: ent.api_key, json });
      expect(res.status).toBe(400);
    }
    expect((await stack.request('/v1/audit/export', { key: ent.api_key })).status).toBe(404);
  });

  it("never aims a signed PUT of the tenant's log at a metadata, private or embedded-IPv4 endpoint", async () => {
    const ent = await enterprise();
    for (const target of [
      'http://169.254.169.254',
      'http://10.0.0.7:9000',
      'http://[::a9fe:a9fe]',
      'http://[64:ff9b:1::a9fe:a9fe]',
      'http://minio.cairn.svc:9000',
    ]) {
      const res = await stack.request('/v1/audit/export', {
        method: 'PUT',
        key: ent.api_key,
        json: { sink: 's3', bucket: 'audit-exports', endpoint: target },
      });
      const problem = (await res.json()) as { code: string; detail: string };
      expect([target, res.status, problem.code]).toEqual([target, 400, 'cairn.validation.invalid_body']);
      expect(problem.detail).toMatch(/^endpoint: /);
    }
  });

  it('writes each closed window once to S3 as NDJSON, and not again after a restart', async () => {
    const ent = await enterprise();
    const put = await stack.request('/v1/audit/export', {
      method: 'PUT',
      key: ent.api_key,
      json: { sink: 's3', bucket: 'audit-exports', prefix: `tenants/${ent.tenant_id}`, region: 'us-east-1', endpoint },
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toMatchObject({ sink: 's3', bucket: 'audit-exports', endpoint, role_arn: null });
    const ids = await publish(ent.tenant_id, 3);

    // Up to 90 s: a PUT the store never answers is cut at the sink's 30 s request timeout and written on a later
    // pass, so one stalled attempt on a loaded machine must not fail a test of what gets written.
    const files = await waitFor(
      'the exported window',
      async () => {
        const f = await s3Files(`tenants/${ent.tenant_id}/`);
        return ids.every((id) => exportedEventIds(f).includes(id)) ? f : undefined;
      },
      90_000,
    );
    for (const key of files.keys()) expect(key).toMatch(KEY);
    const lines = [...files.values()].flatMap(parse);
    // Every entry exactly once, chained in order.
    expect(new Set(lines.map((l) => l.entry_id)).size).toBe(lines.length);
    const published = lines.filter((l) => ids.includes(l.event_id));
    expect(published).toHaveLength(3);
    expect(published[1]!.prev_hash).toBe(published[0]!.hash);

    // Restart: windows already written are not written again (a deleted file stays deleted).
    const [firstKey] = [...files.keys()].sort();
    await s3.send(new DeleteObjectCommand({ Bucket: 'audit-exports', Key: firstKey! }));
    const shown = (await (await stack.request('/v1/audit/export', { key: ent.api_key })).json()) as {
      exported_until: string;
      last_error: string | null;
    };
    expect(shown.last_error).toBeNull();
    const before = await exportedUntil(ent.tenant_id);
    await stack.stopService('audit');
    await stack.restart('audit');
    await waitFor('windows after the restart', async () => {
      const t = await exportedUntil(ent.tenant_id);
      return t >= before + 4000 ? t : undefined;
    });
    const again = await s3Files(`tenants/${ent.tenant_id}/`);
    expect(again.has(firstKey!)).toBe(false);
    for (const [key, body] of files) if (key !== firstKey) expect(again.get(key)).toBe(body);
    expect(exportedEventIds(again).filter((id) => ids.includes(id)).length).toBeLessThanOrEqual(3);

    const deleted = await stack.request('/v1/audit/export', { method: 'DELETE', key: ent.api_key });
    expect(deleted.status).toBe(204);
  }, 180_000);

  it('writes to the filesystem sink and never overwrites a window already there', async () => {
    const ent = await enterprise();
    const put = await stack.request('/v1/audit/export', {
      method: 'PUT',
      key: ent.api_key,
      json: { sink: 'filesystem', path: 'exports', prefix: 'audit' },
    });
    expect(put.status).toBe(200);
    const ids = await publish(ent.tenant_id, 2);
    const root = join(exportDir, ent.tenant_id, 'exports');
    const readAll = async (): Promise<Map<string, string>> => {
      const files = new Map<string, string>();
      const names = (await readdir(root, { recursive: true }).catch(() => [] as string[])).filter((n) =>
        n.endsWith('.ndjson'),
      );
      for (const name of names) files.set(name, await readFile(join(root, name), 'utf8'));
      return files;
    };
    const files = await waitFor('the exported window', async () => {
      const f = await readAll();
      return ids.every((id) => exportedEventIds(f).includes(id)) ? f : undefined;
    });
    for (const key of files.keys()) expect(key).toMatch(KEY);
    expect((await readdir(root, { recursive: true })).some((n) => n.includes('.partial'))).toBe(false);

    // As if the process had died after writing a window but before recording it: the window is found again,
    // the file already there is kept as it is, and the export moves on.
    const [key, body] = [...files.entries()].find(([, b]) => ids.some((id) => b.includes(id)))!;
    await writeFile(join(root, key), `${body}{"marker":true}\n`);
    const current = await exportedUntil(ent.tenant_id);
    await admin.query(`update audit.export_configs set exported_until = $2 where tenant_id = $1`, [
      ent.tenant_id,
      new Date(startOf(key)),
    ]);
    await waitFor('the export to move past the rewound window', async () => {
      const t = await exportedUntil(ent.tenant_id);
      return t > current ? t : undefined;
    });
    expect(await readFile(join(root, key), 'utf8')).toBe(`${body}{"marker":true}\n`);
  });
});

/** The start of the window a key names. */
function startOf(key: string): number {
  const m = /year=(\d{4})\/month=(\d{2})\/day=(\d{2})\/(\d{2})(\d{2})(\d{2})-/.exec(key)!;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}
