import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isId } from '@cairn/ids';

/*
 * Every event Cairn publishes, defined once: the payload (`data`) of each type as a zod schema. Producers build
 * events through newEvent (envelope.ts), typed by these schemas; every consumer receives events parsed by them
 * (the bus terminates one that does not parse). docs/decisions/0004-events-as-zod-schemas.md says why zod and not
 * protobuf.
 *
 * The types are exact (a producer's misspelt or forgotten field is a compile error), but parsing is loose
 * (EVENT_PARSERS): a field this version does not know is kept, not stripped, so a consumer older than its
 * producer still passes the whole payload on (the audit log records it, webhooks deliver it).
 */

const id = z.string().min(1);
const isoTime = z.string().datetime({ offset: true });
const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
/** A billing meter name (billing's catalog); billing checks it is one it knows before metering. */
const meter = z.string().min(1);

/** An RFC 7807 problem as a failed job records it. */
const problem = z.looseObject({ code: z.string(), title: z.string(), status: z.number().int(), detail: z.string() });

const billingPeriod = { period_start: isoTime, period_end: isoTime };

/**
 * The administrative actions the audit log records as `admin.changed` (docs/decisions/0040-admin-changes-audited.md).
 */
export const ADMIN_ACTIONS = [
  'signing_credential.registered',
  'signing_credential.deleted',
  'webhook.created',
  'webhook.secret_rotated',
  'webhook.deleted',
  'trust_list.set',
  'trust_list.deleted',
  'audit_export.set',
  'audit_export.deleted',
  'api_key.created',
  'api_key.revoked',
  'tenant.sub_tenant_created',
  'tenant.settings_changed',
] as const;
export type AdminAction = (typeof ADMIN_ACTIONS)[number];

/** An API key id as packages/ids mints it: what an admin change names as its actor. */
const actorKeyId = z.string().refine((value) => isId('key', value), 'not an API key id');

/**
 * The actor a request names (an empty string: none, an operator's direct call); undefined when it is not a key id,
 * which the service answers as an invalid request.
 */
export function parseActorKeyId(raw: string): string | null | undefined {
  if (raw === '') return null;
  return isId('key', raw) ? raw : undefined;
}

/**
 * How an admin change names a secret it issued: the first 16 hex digits of its SHA-256, enough to tell two
 * secrets apart and nothing to sign with (every secret Cairn issues is 32 random bytes, so no way back to it).
 */
export function secretFingerprint(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 16);
}

export const EVENT_DATA = {
  /** A sign committed (signer). Carries what the consumers need so none has to call the signer back. */
  'asset.signed': z.object({
    asset_id: id,
    manifest_id: id,
    recipe_id: z.string(),
    media_type: z.string().min(1),
    /** Where the signed asset's bytes are (packages/blob); softbinding fingerprints them from here. */
    blob_key: z.string().min(1),
    'billing.meter': meter,
    watermark_id: id.nullable(),
    watermark_payload: z.string().nullable(),
    /**
     * The recipe asked for a watermark and none was embedded (no mark read back from the signed content): why.
     * Absent when a mark was embedded or none was asked for. The audit entry of the sign keeps it.
     */
    watermark_not_embedded: z.string().optional(),
    manifest_uri: z.string().min(1),
    verifier_url: z.string().min(1),
    content_sha256: hex64,
    soft_binding: z.boolean(),
    anchor: z.boolean(),
    /** SHA-256 of the manifest store; present when `anchor` (the anchor service enqueues it idempotently). */
    manifest_digest: hex64.optional(),
    /**
     * The billing reservation(s) the sign consumes (absent when the caller metered nothing): billing commits them
     * from this event, so a sign that is recorded is billed even when the caller's own commit was lost.
     */
    reservation_id: z.string().optional(),
    byok_reservation_id: z.string().optional(),
  }),
  /** An authenticated verify (verifier). */
  'asset.verified': z.object({
    status: z.string().min(1),
    confidence: z.number().nullable(),
    manifest_id: id.nullable(),
    asset_id: id.nullable(),
    media_type: z.string().min(1),
    'billing.meter': meter.optional(),
    /**
     * The billing reservation the verify consumes (an authenticated upload's, reserved by the gateway before the
     * work): billing commits it from this event, written in the verify's own transaction, so the answer does not
     * wait for a commit round trip.
     */
    reservation_id: z.string().optional(),
  }),
  /** A soft-binding lookup (softbinding). */
  'asset.lookup': z.object({ matches: z.number().int().nonnegative(), 'billing.meter': meter }),
  /** An asynchronous sign finished (signer). */
  'job.completed': z.object({
    job_id: id,
    reservation_id: z.string().nullable(),
    byok_reservation_id: z.string().optional(),
    asset_id: id,
    watermark_id: id.nullable(),
    manifest_uri: z.string().min(1),
    verifier_url: z.string().min(1),
    recipe_id: z.string(),
    anchor: z.looseObject({ batch_id: id, status: z.string() }).nullable(),
  }),
  /** An asynchronous sign (signer) or verify (verifier, kind 'verify') failed for good. */
  'job.failed': z.object({
    job_id: id,
    reservation_id: z.string().nullable(),
    byok_reservation_id: z.string().optional(),
    recipe_id: z.string().nullable().optional(),
    kind: z.literal('verify').optional(),
    problem,
  }),
  /** A batch's Merkle root is confirmed on chain: one event per tenant with manifests in it (anchor). */
  'anchor.confirmed': z.object({
    batch_id: id,
    merkle_root: z.string().nullable(),
    size: z.number().int().nonnegative(),
    chain_id: z.number().int().nullable(),
    tx_hash: z.string().nullable(),
    block_number: z.number().int().nonnegative(),
    confirmed_at: isoTime,
    manifests: z.number().int().nonnegative(),
    'billing.meter': meter,
    'billing.quantity': z.number().int().positive(),
  }),
  'billing.quota_warning': z.object({
    meter,
    used: z.number(),
    limit: z.number(),
    threshold: z.number(),
    ...billingPeriod,
  }),
  'billing.quota_exceeded': z.object({
    meter,
    used: z.number(),
    limit: z.number(),
    overage: z.boolean().optional(),
    ...billingPeriod,
  }),
  'billing.spending_cap_warning': z.object({
    spend_usd: z.number(),
    spending_cap_usd: z.number().nullable(),
    threshold: z.number(),
    ...billingPeriod,
  }),
  /** An API key expires within 7 days (gateway). */
  'key.expiring': z.object({
    key_id: id,
    scope: z.string(),
    description: z.string().optional(),
    expires_at: isoTime,
  }),
  'manifest.signed': z.object({ manifest_id: id, asset_id: id, recipe: z.string(), status: z.literal('signed') }),
  /** An asynchronous verify finished (verifier). */
  'verification.completed': z.object({
    job_id: id,
    reservation_id: z.string().nullable(),
    status: z.string().min(1),
    confidence: z.number().nullable(),
    manifest_id: id.nullable(),
    asset_id: id.nullable(),
    media_type: z.string().min(1),
  }),
  /** A CA certificate nears its end (signer; tenant 'system'). */
  'certificate.expiring': z.object({
    serial_hex: z.string().min(1),
    role: z.string(),
    subject: z.string(),
    key_backend: z.string(),
    not_after: isoTime,
    days_left: z.number(),
  }),
  /** A signing certificate was revoked (signer; tenant 'system'). */
  'certificate.revoked': z.object({ serial_hex: z.string().min(1), reason: z.string(), revoked_at: isoTime }),
  /** A webhook delivery gave up (webhook). */
  'webhook.failed': z.object({
    webhook_id: id,
    delivery_id: id,
    event_id: id,
    event_type: z.string(),
    url: z.string().nullable(),
    attempts: z.number().int().positive(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
  }),
  'tenant.created': z.object({
    tenant_id: id,
    name: z.string(),
    plan: z.string(),
    parent_tenant_id: id.nullable(),
    via: z.string(),
  }),
  'key.created': z.object({
    key_id: id,
    scope: z.string(),
    expires_at: isoTime.nullable(),
    actor_tenant_id: id,
  }),
  'key.revoked': z.object({ key_id: id, actor_tenant_id: id }),
  'settings.changed': z.object({
    changes: z.record(z.string(), z.looseObject({ from: z.unknown(), to: z.unknown() })),
    actor_tenant_id: id,
    reason: z.string().optional(),
  }),
  /**
   * An administrative change (docs/decisions/0040-admin-changes-audited.md): written by the service that owns the
   * setting, in the transaction that changes it, and recorded in the tenant's audit chain. `before`/`after` hold the
   * settings that changed and never a secret (a secret shows as a SHA-256 fingerprint or the marker "rotated").
   * `actor_key_id` is the API key that made the change; null when an operator called the service directly.
   */
  'admin.changed': z.object({
    action: z.enum(ADMIN_ACTIONS),
    object_type: z.string().min(1),
    object_id: id,
    actor_key_id: actorKeyId.nullable(),
    actor_tenant_id: id.optional(),
    before: z.record(z.string(), z.unknown()).nullable(),
    after: z.record(z.string(), z.unknown()).nullable(),
  }),
} as const;

export type EventType = keyof typeof EVENT_DATA;

/** The schemas as parsed: the same fields, unknown ones kept. */
export const EVENT_PARSERS = Object.fromEntries(
  Object.entries(EVENT_DATA).map(([type, schema]) => [type, schema.loose()]),
) as { [T in EventType]: ReturnType<(typeof EVENT_DATA)[T]['loose']> };

/** Every event type, in the order above. */
export const EVENT_TYPES = Object.keys(EVENT_DATA) as [EventType, ...EventType[]];

/** What a consumer receives in `data` for an event of type T (after parsing). */
export type EventData<T extends EventType> = z.output<(typeof EVENT_DATA)[T]>;
/** What a producer must give as `data` for an event of type T. */
export type EventDataInput<T extends EventType> = z.input<(typeof EVENT_DATA)[T]>;
