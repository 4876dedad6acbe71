import { randomUUID } from 'node:crypto';
import { link, mkdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import { outboundPolicy, publicFailure, refusedReason, vetLiteralHost, vettedLookup } from '@cairn/outbound';
import type { ExportSink, WriteOutcome } from '../app/ports.js';
import { invalid, type ExportSettings } from '../domain/export-settings.js';

const INTERNAL_NAMES = /(^|\.)(localhost|local|internal|localdomain|home\.arpa|svc|cluster\.local)$/i;

/**
 * Cairn's one outbound policy at configuration (the connect-time check in openSink is the real one): a signed PUT
 * of the tenant's log must never reach a metadata service or anything inside the deployment; loopback only in
 * development.
 */
export function assertTenantEndpoint(endpoint: string | null, production: boolean): void {
  if (!endpoint) return;
  const policy = outboundPolicy(production ? 'production' : 'development');
  const host = new URL(endpoint).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopbackName = host === 'localhost';
  const reason = isIP(host)
    ? refusedReason(host, policy)
    : loopbackName
      ? policy.allowLoopback
        ? undefined
        : 'loopback'
      : INTERNAL_NAMES.test(host)
        ? 'internal name'
        : !host.includes('.')
          ? 'single-label name'
          : undefined;
  if (reason) invalid('endpoint', `points to a ${reason} address, which Cairn may not send a tenant's log to`);
}

/** A refusal Cairn itself writes, fit to show the tenant as it is (no address, host or answer in it). */
export class SinkRefusedError extends Error {}

/**
 * What a tenant reads in its export's last_error: Cairn's own refusals as they are, the storage service's answer
 * by name and status, a network failure by class; never an address, host or body.
 */
export function tenantFacingError(error: unknown): string {
  if (error instanceof SinkRefusedError) return error.message;
  const answered = error as { name?: string; $metadata?: { httpStatusCode?: number } } | undefined;
  const status = answered?.$metadata?.httpStatusCode;
  if (typeof status === 'number')
    return `the storage service answered ${/^\w{1,64}$/.test(answered?.name ?? '') ? answered!.name : 'an error'} (HTTP ${status})`;
  if ((error as NodeJS.ErrnoException | undefined)?.code) return publicFailure(error);
  return 'the export failed; it is retried';
}

/** 'written' the first time a key is written; 'exists' when it already was (the write was refused, nothing changed). */
/** Files under a directory; written to a temporary name and hard-linked into place, which fails if the name exists. */
export class FilesystemSink implements ExportSink {
  readonly kind = 'filesystem' as const;
  constructor(private readonly root: string) {}

  async writeOnce(key: string, body: string): Promise<WriteOutcome> {
    const target = join(this.root, key);
    await mkdir(dirname(target), { recursive: true });
    const temporary = `${target}.${randomUUID()}.partial`;
    await writeFile(temporary, body, { flag: 'wx' });
    try {
      await link(temporary, target);
      return 'written';
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
      throw error;
    } finally {
      await unlink(temporary).catch(() => undefined); // gone already when the link succeeded
    }
  }

  close(): void {}
}

/** Objects in a bucket, put with If-None-Match: * so an object already there is never replaced. */
export class S3Sink implements ExportSink {
  readonly kind = 's3' as const;
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  async writeOnce(key: string, body: string): Promise<WriteOutcome> {
    try {
      const bytes = Buffer.from(body, 'utf8');
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: bytes,
          ContentLength: bytes.length,
          ContentType: 'application/x-ndjson',
          IfNoneMatch: '*',
        }),
      );
      return 'written';
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status === 412 || (error as Error).name === 'PreconditionFailed') return 'exists';
      throw error;
    }
  }

  close(): void {
    this.client.destroy();
  }
}

export interface SinkEnvironment {
  /** AUDIT_EXPORT_DIR: the filesystem sink writes under <dir>/<tenant_id>/<path>. */
  exportDir: string;
  production: boolean;
  /** The service's own credentials when set in its environment; otherwise the SDK's default provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

export function credentialsFromEnv(env: NodeJS.ProcessEnv): SinkEnvironment['credentials'] {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) return undefined;
  return { accessKeyId, secretAccessKey, ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) };
}

/** Refuses a plain-http endpoint in production (credentials and the log would cross the network in clear). */
export function assertEndpointAllowed(endpoint: string | null | undefined, production: boolean): void {
  if (!endpoint) return;
  if (production && new URL(endpoint).protocol !== 'https:')
    throw new SinkRefusedError('export endpoint must be https in production');
}

/** The sink a tenant's settings describe; with role_arn, S3 is written with the role's temporary credentials (AssumeRole, ExternalId = tenant id). */
export async function openSink(
  tenantId: string,
  settings: ExportSettings,
  environment: SinkEnvironment,
): Promise<ExportSink> {
  if (settings.sink === 'filesystem') {
    // A destination stored before the deployment ran in production: refused (recorded as the tenant's export
    // error) rather than written into the pod's disk.
    if (environment.production)
      throw new SinkRefusedError('the filesystem export sink is not available in production; use s3');
    return new FilesystemSink(join(environment.exportDir, tenantId, settings.path ?? ''));
  }
  assertEndpointAllowed(settings.endpoint, environment.production);
  const region = settings.region ?? 'us-east-1';
  let credentials = environment.credentials;
  if (settings.roleArn) {
    const sts = new STSClient({ region, ...(credentials ? { credentials } : {}) });
    try {
      const assumed = await sts.send(
        new AssumeRoleCommand({
          RoleArn: settings.roleArn,
          RoleSessionName: `cairn-audit-export-${tenantId}`.slice(0, 64),
          ExternalId: tenantId,
          DurationSeconds: 900,
        }),
      );
      const c = assumed.Credentials;
      if (!c?.AccessKeyId || !c.SecretAccessKey)
        throw new SinkRefusedError(`AssumeRole ${settings.roleArn} returned no credentials`);
      credentials = {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}),
      };
    } finally {
      sts.destroy();
    }
  }
  // A tenant-named endpoint is vetted at connect time against the outbound policy, as a webhook receiver is.
  const policy = outboundPolicy(environment.production ? 'production' : 'development');
  // Sockets skip `lookup` for an IP-literal host: that one is vetted here (a setting stored before a policy change).
  if (settings.endpoint) vetLiteralHost(new URL(settings.endpoint), policy);
  const lookup = vettedLookup(policy);
  const config: S3ClientConfig = {
    region,
    ...(settings.endpoint ? { endpoint: settings.endpoint, forcePathStyle: true } : {}),
    // Bounded like every outbound request: a store that stops answering fails this pass (retried on the next)
    // instead of holding the exporter, and with it every other tenant's export, indefinitely.
    requestHandler: {
      httpAgent: new HttpAgent({ lookup }),
      httpsAgent: new HttpsAgent({ lookup }),
      connectionTimeout: 5_000,
      requestTimeout: 30_000,
    },
    ...(credentials ? { credentials } : {}),
  };
  if (!settings.bucket) throw new SinkRefusedError('s3 export has no bucket');
  return new S3Sink(new S3Client(config), settings.bucket);
}
