import { CairnError } from '@cairn/errors';

export type SinkKind = 's3' | 'filesystem';

/** A tenant's export destination, as stored (audit.export_configs) and validated. */
export interface ExportSettings {
  sink: SinkKind;
  bucket: string | null;
  prefix: string | null;
  region: string | null;
  endpoint: string | null;
  roleArn: string | null;
  path: string | null;
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z]{2}(-[a-z0-9]+)+-\d$/;
const ROLE_ARN = /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/;
const SEGMENT = /^[A-Za-z0-9._=-]{1,128}$/;

export function invalid(path: string, message: string): never {
  throw new CairnError('cairn.validation.invalid_body', `${path}: ${message}`, { errors: [{ path, message }] });
}

/** A relative path of safe segments (no "..", no leading "/"), or null when empty. */
function relativePath(value: string, name: string): string | null {
  const trimmed = value.replace(/^\/+|\/+$/g, '');
  if (!trimmed) return null;
  const segments = trimmed.split('/');
  if (segments.length > 16 || segments.some((s) => !SEGMENT.test(s) || s === '.' || s === '..'))
    invalid(name, 'must be a relative path of letters, digits, ".", "_", "-", "=" segments');
  return segments.join('/');
}

/** What a client asks for (cairn.audit.v1.ExportConfig's settings). */
export interface ExportSettingsInput {
  sink: string;
  bucket: string;
  prefix: string;
  region: string;
  endpoint: string;
  roleArn: string;
  path: string;
}

/** Validates what a client asked for (the gateway checks the shape first; this is the authoritative check). */
export function validateSettings(input: ExportSettingsInput, production: boolean): ExportSettings {
  const prefix = relativePath(input.prefix, 'prefix');
  if (input.sink === 'filesystem') {
    // The service's own disk: in a cluster, a pod's ephemeral volume, gone with the pod and out of the tenant's reach.
    if (production) invalid('sink', 'the filesystem sink is not available in production; use "s3"');
    if (input.bucket || input.endpoint || input.roleArn || input.region)
      invalid('sink', 'bucket, region, endpoint and role_arn are for the s3 sink');
    return {
      sink: 'filesystem',
      bucket: null,
      prefix,
      region: null,
      endpoint: null,
      roleArn: null,
      path: relativePath(input.path, 'path'),
    };
  }
  if (input.sink !== 's3') invalid('sink', 'must be "s3" or "filesystem"');
  if (input.path) invalid('path', 'is for the filesystem sink');
  if (!BUCKET.test(input.bucket)) invalid('bucket', 'must be an S3 bucket name');
  if (input.region && !REGION.test(input.region)) invalid('region', 'must be an AWS region such as eu-west-1');
  if (input.roleArn && !ROLE_ARN.test(input.roleArn)) invalid('role_arn', 'must be an IAM role ARN');
  let endpoint: string | null = null;
  if (input.endpoint) {
    let url: URL;
    try {
      url = new URL(input.endpoint);
    } catch {
      invalid('endpoint', 'must be a URL');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') invalid('endpoint', 'must be an http(s) URL');
    if (production && url.protocol !== 'https:') invalid('endpoint', 'must be https in production');
    if (url.username || url.password) invalid('endpoint', 'must not carry credentials');
    endpoint = url.origin;
  }
  // Without a role Cairn would write with its own ambient credentials, to whatever bucket the tenant names.
  if (production && !input.roleArn)
    invalid('role_arn', "is required in production: Cairn writes a tenant's log only with a role the tenant grants");
  return {
    sink: 's3',
    bucket: input.bucket,
    prefix,
    region: input.region || null,
    endpoint,
    roleArn: input.roleArn || null,
    path: null,
  };
}
