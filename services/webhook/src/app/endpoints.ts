import { CairnError } from '@cairn/errors';
import { isId, newId, newWebhookSecret } from '@cairn/ids';
import type { Sealer } from '@cairn/sealing';
import type { PayloadFormat } from '../domain/events.js';
import { WEBHOOK_EVENTS, isWebhookEvent } from '../domain/events.js';
import type { AttemptRow, DeliveryRow, EndpointRecords, EndpointRow, EndpointUrlCheck } from './ports.js';
import type { Tx } from '@cairn/db';
import { newEvent, secretFingerprint, type AdminAction, type AnyEvent } from '@cairn/events';

export type { AttemptRow, DeliveryRow, EndpointRow };

/** How long a replaced signing secret keeps signing when the rotation does not say: a day to deploy the new one. */
export const DEFAULT_SECRET_OVERLAP_SECONDS = 0;
export const MAX_SECRET_OVERLAP_SECONDS = 7 * 86_400;
const MAX_ENDPOINT_PAGE = 100;
const MAX_DELIVERY_PAGE = 100;

/** Where an admin change's audit event goes: the service's outbox, in the transaction of the change. */
export interface AdminAuditOutbox {
  enqueue(tx: Tx, event: AnyEvent): Promise<void>;
  flush(): Promise<void>;
}

/** An endpoint's settings as its audit entry shows them; the signing secret never (a fingerprint at most). */
function endpointSettings(row: EndpointRow): Record<string, unknown> {
  return {
    url: row.url,
    events: row.events,
    description: row.description,
    payload_format: row.payloadFormat,
  };
}

export interface CreateEndpointInput {
  tenantId: string;
  url: string;
  events: readonly string[];
  payloadFormat: string;
  description: string;
  /** The API key asking (the audit entry's actor); null for an operator's direct call. */
  actorKeyId: string | null;
}

function validEvents(events: readonly string[]): string[] {
  if (events.length === 0)
    throw new CairnError(
      'cairn.webhook.unknown_event',
      `events must name at least one of: ${WEBHOOK_EVENTS.join(', ')}.`,
    );
  const unknown = events.filter((e) => !isWebhookEvent(e));
  if (unknown.length > 0) {
    throw new CairnError(
      'cairn.webhook.unknown_event',
      `Unknown event${unknown.length > 1 ? 's' : ''} ${unknown.map((e) => JSON.stringify(e)).join(', ')}; allowed: ${WEBHOOK_EVENTS.join(', ')}.`,
    );
  }
  return [...new Set(events)];
}

/** A tenant's webhook endpoints and their deliveries (every statement scoped to the tenant). */
export class Endpoints {
  constructor(
    private readonly store: EndpointRecords,
    private readonly sealer: Sealer,
    private readonly checkUrl: EndpointUrlCheck,
    /** Called after a redelivery is scheduled, so it goes out now rather than at the next poll. */
    private readonly wake: () => void,
    /** Every create, rotation and delete leaves an admin.changed audit event in its own transaction. */
    private readonly outbox: AdminAuditOutbox,
  ) {}

  private async audit(
    tx: Tx,
    action: Extract<AdminAction, `webhook.${string}`>,
    row: EndpointRow,
    actorKeyId: string | null,
    states: { before: Record<string, unknown> | null; after: Record<string, unknown> | null },
  ): Promise<void> {
    await this.outbox.enqueue(
      tx,
      newEvent('admin.changed', row.tenantId, {
        action,
        object_type: 'webhook',
        object_id: row.webhookId,
        actor_key_id: actorKeyId,
        ...states,
      }),
    );
  }

  /** Creates an endpoint; the signing secret is answered once and stored sealed. */
  async create(input: CreateEndpointInput): Promise<{ endpoint: EndpointRow; secret: string }> {
    const url = this.checkUrl(input.url);
    const events = validEvents(input.events);
    const format = (input.payloadFormat || 'a') as PayloadFormat;
    if (format !== 'a' && format !== 'b')
      throw new CairnError('cairn.validation.invalid_body', 'payload_format must be "a" or "b".');
    if (input.description.length > 500)
      throw new CairnError('cairn.validation.invalid_body', 'description must be at most 500 characters.');
    const webhookId = newId('webhook');
    const secret = newWebhookSecret();
    const endpoint = await this.store.inTenant(input.tenantId, async (tx) => {
      const row = await this.store.insert(tx, {
        webhookId,
        tenantId: input.tenantId,
        url: url.toString(),
        events,
        description: input.description || null,
        payloadFormat: format,
        sealedSecret: this.sealer.seal(secret, webhookId),
      });
      await this.audit(tx, 'webhook.created', row, input.actorKeyId, {
        before: null,
        after: { ...endpointSettings(row), secret_sha256: secretFingerprint(secret) },
      });
      return row;
    });
    void this.outbox.flush();
    return { endpoint, secret };
  }

  async list(tenantId: string, limit: number): Promise<EndpointRow[]> {
    return this.store.listLive(tenantId, Math.min(Math.max(limit || 50, 1), MAX_ENDPOINT_PAGE));
  }

  async get(tenantId: string, webhookId: string): Promise<EndpointRow> {
    return this.store.inTenant(tenantId, (tx) => this.live(tx, tenantId, webhookId));
  }

  async delete(tenantId: string, webhookId: string, actorKeyId: string | null = null): Promise<EndpointRow> {
    const deleted = await this.store.inTenant(tenantId, async (tx) => {
      const current = await this.live(tx, tenantId, webhookId);
      const row = await this.store.markDeleted(tx, webhookId);
      await this.audit(tx, 'webhook.deleted', current, actorKeyId, {
        before: endpointSettings(current),
        after: null,
      });
      return row;
    });
    void this.outbox.flush();
    return deleted;
  }

  /**
   * A new secret. The replaced one keeps signing beside it for `overlapSeconds` (deliveries carry both
   * signatures), so a receiver that accepts a list keeps accepting deliveries until it has switched; 0 (the
   * default: the spec writes one value) ends it at once, as for a leaked secret. A rotation during an overlap drops the older secret: only the one just replaced overlaps.
   */
  async rotateSecret(
    tenantId: string,
    webhookId: string,
    overlapSeconds: number = DEFAULT_SECRET_OVERLAP_SECONDS,
    actorKeyId: string | null = null,
  ): Promise<{ endpoint: EndpointRow; secret: string }> {
    if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_SECRET_OVERLAP_SECONDS)
      throw new CairnError(
        'cairn.validation.invalid_body',
        `overlap_seconds must be a whole number from 0 to ${MAX_SECRET_OVERLAP_SECONDS} (7 days).`,
      );
    const secret = newWebhookSecret();
    const endpoint = await this.store.inTenant(tenantId, async (tx) => {
      const current = await this.live(tx, tenantId, webhookId);
      // Sealed with the endpoint's id as context, so the replaced secret moves over as it is.
      const previous =
        overlapSeconds > 0
          ? { sealedSecret: current.sealedSecret, expiresAt: new Date(Date.now() + overlapSeconds * 1000) }
          : null;
      const rotated = await this.store.setSealedSecret(tx, webhookId, this.sealer.seal(secret, webhookId), previous);
      await this.audit(tx, 'webhook.secret_rotated', current, actorKeyId, {
        before: { secret: 'replaced' },
        after: {
          secret: 'rotated',
          secret_sha256: secretFingerprint(secret),
          previous_secret_expires_at: previous?.expiresAt.toISOString() ?? null,
        },
      });
      return rotated;
    });
    void this.outbox.flush();
    return { endpoint, secret };
  }

  async deliveries(
    tenantId: string,
    webhookId: string,
    limit: number,
  ): Promise<{ rows: DeliveryRow[]; log: AttemptRow[] }> {
    return this.store.inTenant(tenantId, async (tx) => {
      await this.live(tx, tenantId, webhookId);
      return this.store.recentDeliveries(
        tx,
        tenantId,
        webhookId,
        Math.min(Math.max(limit || 20, 1), MAX_DELIVERY_PAGE),
      );
    });
  }

  /** An attempt in flight finishes on its own; anything else starts a fresh cycle of five attempts now. */
  async redeliver(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
  ): Promise<{ delivery: DeliveryRow; log: AttemptRow[] }> {
    const result = await this.store.inTenant(tenantId, async (tx) => {
      await this.live(tx, tenantId, webhookId);
      const row = await this.store.delivery(tx, tenantId, webhookId, deliveryId);
      if (!row) throw new CairnError('cairn.not_found', `Delivery ${deliveryId} not found.`);
      const delivery = row.status === 'delivering' ? row : await this.store.restartDelivery(tx, row.deliveryId);
      return { delivery, log: await this.store.attemptsOf(tx, row.deliveryId) };
    });
    this.wake();
    return result;
  }

  private async live(tx: Tx, tenantId: string, webhookId: string): Promise<EndpointRow> {
    const row = isId('webhook', webhookId) ? await this.store.liveEndpoint(tx, tenantId, webhookId) : undefined;
    if (!row) throw new CairnError('cairn.not_found', `Webhook ${webhookId} not found.`);
    return row;
  }
}
