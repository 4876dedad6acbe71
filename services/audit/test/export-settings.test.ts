import { describe, expect, it } from '@jest/globals';
import { windowKey, windowStart } from '../src/domain/export-window.js';
import { validateSettings } from '../src/domain/export-settings.js';
import { assertEndpointAllowed, assertTenantEndpoint, openSink, tenantFacingError } from '../src/adapters/sinks.js';
import { auditExportDir } from '../src/config.js';

const ROLE = 'arn:aws:iam::123456789012:role/CairnAuditExport';
const blank = { sink: 's3', bucket: 'audit-bucket', prefix: '', region: '', endpoint: '', roleArn: '', path: '' };

describe('export settings', () => {
  it('refuses the filesystem sink in production: at configuration, at export time, and AUDIT_EXPORT_DIR at start', async () => {
    const filesystem = { ...blank, sink: 'filesystem', bucket: '', path: 'exports' };
    expect(validateSettings(filesystem, false).sink).toBe('filesystem');
    expect(() => validateSettings(filesystem, true)).toThrow(
      /sink: the filesystem sink is not available in production/,
    );
    // A destination stored while the deployment ran in development is never written in production.
    const stored = validateSettings(filesystem, false);
    await expect(openSink('t_1', stored, { exportDir: '/tmp/cairn-never', production: true })).rejects.toThrow(
      /filesystem export sink is not available in production/,
    );
    expect(auditExportDir({ CAIRN_ENV: 'development' })).toBe('/tmp/cairn/audit-export');
    expect(auditExportDir({ CAIRN_ENV: 'development', AUDIT_EXPORT_DIR: '/srv/audit' })).toBe('/srv/audit');
    expect(() => auditExportDir({ CAIRN_ENV: 'production', AUDIT_EXPORT_DIR: '/srv/audit' })).toThrow(
      /AUDIT_EXPORT_DIR: the filesystem export sink is refused in production/,
    );
  });

  it('allows a plain-http endpoint in development only', () => {
    expect(validateSettings({ ...blank, endpoint: 'http://127.0.0.1:9000' }, false).endpoint).toBe(
      'http://127.0.0.1:9000',
    );
    expect(() => validateSettings({ ...blank, endpoint: 'http://minio.internal:9000' }, true)).toThrow(
      /https in production/,
    );
    expect(validateSettings({ ...blank, endpoint: 'https://s3.example.com', roleArn: ROLE }, true).endpoint).toBe(
      'https://s3.example.com',
    );
    expect(() => assertEndpointAllowed('http://x', true)).toThrow(/https/);
  });

  it('in production writes only with a role the tenant grants, never with the service own credentials', () => {
    expect(() => validateSettings({ ...blank }, true)).toThrow(/role_arn: is required in production/);
    expect(validateSettings({ ...blank, roleArn: ROLE }, true).roleArn).toBe(ROLE);
    expect(validateSettings({ ...blank }, false).roleArn).toBeNull();
  });

  it('refuses endpoints inside the deployment under the outbound policy; loopback only in development', () => {
    const configured = (endpoint: string, production: boolean) =>
      assertTenantEndpoint(
        validateSettings({ ...blank, endpoint, roleArn: production ? ROLE : '' }, production).endpoint,
        production,
      );
    for (const endpoint of [
      'http://169.254.169.254',
      'http://10.0.0.7:9000',
      'http://[fd00::1]:9000',
      'http://[::a9fe:a9fe]',
      'http://[2002:a9fe:a9fe::1]',
      'http://minio.cairn.svc:9000',
      'http://storage.cluster.local',
      'http://minio:9000',
      'http://user:pw@s3.example.com',
    ])
      expect(() => configured(endpoint, false)).toThrow(/^endpoint: /);
    expect(() => configured('http://localhost:9000', false)).not.toThrow();
    expect(() => configured('http://127.0.0.1:9000', false)).not.toThrow();
    expect(() => configured('https://127.0.0.1:9000', true)).toThrow(/loopback/);
    expect(() => configured('https://localhost:9000', true)).toThrow(/loopback/);
    expect(() => configured('https://s3.eu-west-1.amazonaws.com', true)).not.toThrow();
  });

  it('tells the tenant a failure by name and status or class, never an address or body', async () => {
    const refused = await openSink(
      't_1',
      { ...validateSettings({ ...blank }, false), endpoint: 'http://169.254.169.254' },
      { exportDir: '/tmp/cairn-never', production: false },
    ).catch((error: unknown) => error);
    expect(tenantFacingError(refused)).toBe('refused by the outbound address policy');
    const s3Answer = Object.assign(new Error('Access Denied <Error><HostId>internal-host-7</HostId></Error>'), {
      name: 'AccessDenied',
      $metadata: { httpStatusCode: 403 },
    });
    expect(tenantFacingError(s3Answer)).toBe('the storage service answered AccessDenied (HTTP 403)');
    expect(
      tenantFacingError(Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:443'), { code: 'ECONNREFUSED' })),
    ).toBe('connection refused');
  });

  it('refuses traversal, bad role ARNs and mixed sinks', () => {
    expect(() => validateSettings({ ...blank, prefix: 'a/../b' }, false)).toThrow(/prefix/);
    expect(() => validateSettings({ ...blank, roleArn: 'arn:aws:iam::12:role/x' }, false)).toThrow(/role_arn/);
    expect(
      validateSettings({ ...blank, roleArn: 'arn:aws:iam::123456789012:role/CairnAuditExport' }, false).roleArn,
    ).toBe('arn:aws:iam::123456789012:role/CairnAuditExport');
    expect(() => validateSettings({ ...blank, sink: 'filesystem' }, false)).toThrow(/s3 sink/);
    expect(validateSettings({ ...blank, sink: 'filesystem', bucket: '', path: '/exports/' }, false)).toMatchObject({
      sink: 'filesystem',
      path: 'exports',
    });
  });
});

describe('export windows', () => {
  it('aligns 15-minute windows and names them in a year/month/day partition', () => {
    const start = windowStart(new Date('2026-03-04T23:52:10Z'), 900);
    expect(start.toISOString()).toBe('2026-03-04T23:45:00.000Z');
    expect(windowKey('audit', start, new Date(start.getTime() + 900_000), 900)).toBe(
      'audit/year=2026/month=03/day=04/2345-0000.ndjson',
    );
    expect(windowKey(null, new Date('2026-03-04T10:00:02Z'), new Date('2026-03-04T10:00:04Z'), 2)).toBe(
      'year=2026/month=03/day=04/100002-100004.ndjson',
    );
  });
});
