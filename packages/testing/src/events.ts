import { newId } from '@cairn/ids';
import { newEvent, type EventDataInput, type EventOf, type EventType } from '@cairn/events';

const hex64 = (seed: string) => seed.repeat(64).slice(0, 64);
const nowIso = () => new Date().toISOString();

/** A plausible payload of every event type, as its producer writes it (tests publish these onto the bus). */
const SAMPLES: { [T in EventType]: () => EventDataInput<T> } = {
  'asset.signed': () => {
    const assetId = newId('asset');
    return {
      asset_id: assetId,
      manifest_id: newId('manifest'),
      recipe_id: 'default',
      media_type: 'image/jpeg',
      blob_key: `t_sample/assets/${assetId}.jpg`,
      'billing.meter': 'image_sign',
      watermark_id: null,
      watermark_payload: null,
      manifest_uri: 'http://127.0.0.1/v1/manifests/m_sample',
      verifier_url: `http://127.0.0.1/v/${assetId}`,
      content_sha256: hex64('a'),
      soft_binding: false,
      anchor: false,
    };
  },
  'asset.verified': () => ({
    status: 'verified',
    confidence: 1,
    manifest_id: null,
    asset_id: null,
    media_type: 'image/jpeg',
    'billing.meter': 'image_verify',
  }),
  'asset.lookup': () => ({ matches: 0, 'billing.meter': 'lookup' }),
  'job.completed': () => {
    const assetId = newId('asset');
    return {
      job_id: newId('job'),
      reservation_id: null,
      asset_id: assetId,
      watermark_id: null,
      manifest_uri: 'http://127.0.0.1/v1/manifests/m_sample',
      verifier_url: `http://127.0.0.1/v/${assetId}`,
      recipe_id: 'default',
      anchor: null,
    };
  },
  'job.failed': () => ({
    job_id: newId('job'),
    reservation_id: null,
    recipe_id: null,
    problem: { code: 'cairn.internal', title: 'Internal error', status: 500, detail: 'sample' },
  }),
  'anchor.confirmed': () => ({
    batch_id: newId('batch'),
    merkle_root: hex64('b'),
    size: 1,
    chain_id: 31337,
    tx_hash: `0x${hex64('c')}`,
    block_number: 1,
    confirmed_at: nowIso(),
    manifests: 1,
    'billing.meter': 'anchor_batch',
    'billing.quantity': 1,
  }),
  'billing.quota_warning': () => ({
    meter: 'image_sign',
    used: 80,
    limit: 100,
    threshold: 0.8,
    period_start: nowIso(),
    period_end: nowIso(),
  }),
  'billing.quota_exceeded': () => ({
    meter: 'image_sign',
    used: 100,
    limit: 100,
    period_start: nowIso(),
    period_end: nowIso(),
  }),
  'billing.spending_cap_warning': () => ({
    spend_usd: 8,
    spending_cap_usd: 10,
    threshold: 0.8,
    period_start: nowIso(),
    period_end: nowIso(),
  }),
  'key.expiring': () => ({ key_id: newId('key'), scope: 'sign', expires_at: nowIso() }),
  'manifest.signed': () => ({
    manifest_id: newId('manifest'),
    asset_id: newId('asset'),
    recipe: 'default',
    status: 'signed',
  }),
  'verification.completed': () => ({
    job_id: newId('job'),
    reservation_id: null,
    status: 'verified',
    confidence: 1,
    manifest_id: null,
    asset_id: null,
    media_type: 'image/jpeg',
  }),
  'certificate.expiring': () => ({
    serial_hex: '01',
    role: 'signing',
    subject: 'CN=sample',
    key_backend: 'software',
    not_after: nowIso(),
    days_left: 7,
  }),
  'certificate.revoked': () => ({ serial_hex: '01', reason: 'keyCompromise', revoked_at: nowIso() }),
  'webhook.failed': () => ({
    webhook_id: newId('webhook'),
    delivery_id: newId('delivery'),
    event_id: newId('event'),
    event_type: 'job.completed',
    url: 'https://example.com/hook',
    attempts: 5,
    last_status_code: 500,
    last_error: 'HTTP 500',
  }),
  'tenant.created': () => {
    const tenantId = newId('tenant');
    return { tenant_id: tenantId, name: 'Sample', plan: 'free', parent_tenant_id: null, via: 'test' };
  },
  'key.created': () => ({ key_id: newId('key'), scope: 'sign', expires_at: null, actor_tenant_id: 't_sample' }),
  'key.revoked': () => ({ key_id: newId('key'), actor_tenant_id: 't_sample' }),
  'settings.changed': () => ({
    changes: { audit_retention_days: { from: 30, to: 60 } },
    actor_tenant_id: 't_sample',
  }),
  'admin.changed': () => ({
    action: 'webhook.created',
    object_type: 'webhook',
    object_id: 'wh_sample',
    actor_key_id: null,
    before: null,
    after: { url: 'https://example.com/hooks', events: ['asset.signed'] },
  }),
};

/** A valid event of `type` for `tenantId`: a plausible payload, with `data` fields given replacing its own. */
export function sampleEvent<T extends EventType>(
  type: T,
  tenantId: string,
  data: Partial<EventDataInput<T>> = {},
): EventOf<T> {
  return newEvent(type, tenantId, { ...SAMPLES[type](), ...data } as EventDataInput<T>);
}
