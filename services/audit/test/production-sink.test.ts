/**
 * In production the audit export never writes into the pod's own disk: a tenant asking for the filesystem sink is
 * refused through the AuditService, and a filesystem destination stored while the deployment ran in development is
 * not written (the tenant's export shows why).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newId } from '@cairn/ids';
import { auditV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, waitFor, type Sandbox } from '@cairn/testing';
import { auditService } from '../src/service.js';

let sandbox: Sandbox;
let exportDir: string;
const running: RunningService[] = [];

const filesystemExport = (tenantId: string) => ({
  tenantId,
  sink: 'filesystem',
  bucket: '',
  prefix: '',
  region: '',
  endpoint: '',
  roleArn: '',
  path: 'exports',
});

async function start(env: NodeJS.ProcessEnv) {
  const service = await startService(auditService({ ...sandbox.env, ...env }));
  running.push(service);
  const client = createClient(auditV1.AuditService, `127.0.0.1:${service.grpcPort}`);
  return {
    client,
    stop: async () => {
      client.close();
      await service.stop();
      running.splice(running.indexOf(service), 1);
    },
  };
}

beforeAll(async () => {
  sandbox = await createSandbox();
  exportDir = await mkdtemp(join(tmpdir(), 'cairn-audit-prod-'));
});
afterAll(async () => {
  for (const service of running) await service.stop();
  await sandbox?.dispose();
  await rm(exportDir, { recursive: true, force: true });
});

describe('the audit export in production', () => {
  it('refuses a filesystem destination, and never writes one stored before', async () => {
    const earlier = newId('tenant');
    // Development: the filesystem sink is allowed (and stored). Exports run rarely here: nothing written yet.
    const development = await start({ AUDIT_EXPORT_DIR: exportDir, AUDIT_EXPORT_INTERVAL_MS: '3600000' });
    await expect(development.client.setExportConfig({ config: filesystemExport(earlier) })).resolves.toMatchObject({
      config: { sink: 'filesystem' },
    });
    await development.stop();

    // Production (no AUDIT_EXPORT_DIR: it would not start with one), windows of a second, looked for often.
    const production = await start({
      CAIRN_ENV: 'production',
      AUDIT_EXPORT_INTERVAL_MS: '100',
      AUDIT_EXPORT_WINDOW_SECONDS: '1',
      AUDIT_EXPORT_GRACE_SECONDS: '0',
    });
    await expect(
      production.client.setExportConfig({ config: filesystemExport(newId('tenant')) }),
    ).rejects.toMatchObject({
      code: 'cairn.validation.invalid_body',
      message: expect.stringMatching(/sink: the filesystem sink is not available in production; use "s3"/),
    });

    const refused = await waitFor('the stored filesystem export refused', async () => {
      const { config } = await production.client.getExportConfig({ tenantId: earlier });
      return config?.lastError ? config : undefined;
    });
    expect(refused.lastError).toMatch(/filesystem export sink is not available in production/);
    await production.stop();
  }, 60_000);
});
