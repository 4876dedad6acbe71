// The ports the webhook use cases run over, declared here (where the use cases can see them) and implemented
// elsewhere: endpoints and deliveries in store/ (Postgres), the HTTP sender and the address policy in adapters/.
// service.ts builds the implementations and injects them.
import type { Tx } from '@cairn/db';
import type { attempts, deliveries, endpoints } from '../db/schema.js';
import type { PayloadFormat } from '../domain/events.js';

export type EndpointRow = typeof endpoints.$inferSelect;
export type DeliveryRow = typeof deliveries.$inferSelect;
export type AttemptRow = typeof attempts.$inferSelect;

export interface NewEndpoint {
  webhookId: string;
  tenantId: string;
  url: string;
  events: string[];
  description: string | null;
  payloadFormat: PayloadFormat;
  sealedSecret: string;
}

/** A tenant's endpoints and deliveries, every statement as that tenant (store/endpoints.ts). */
export interface EndpointRecords {
  inTenant<T>(tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T>;
  insert(tx: Tx, endpoint: NewEndpoint): Promise<EndpointRow>;
  listLive(tenantId: string, limit: number): Promise<EndpointRow[]>;
  liveEndpoint(tx: Tx, tenantId: string, webhookId: string): Promise<EndpointRow | undefined>;
  markDeleted(tx: Tx, webhookId: string): Promise<EndpointRow>;
  /** The new secret, and the one it replaces while it keeps signing (none: null). */
  setSealedSecret(
    tx: Tx,
    webhookId: string,
    sealedSecret: string,
    previous: { sealedSecret: string; expiresAt: Date } | null,
  ): Promise<EndpointRow>;
  /** An endpoint's latest deliveries, newest first, with the attempts of each. */
  recentDeliveries(
    tx: Tx,
    tenantId: string,
    webhookId: string,
    limit: number,
  ): Promise<{ rows: DeliveryRow[]; log: AttemptRow[] }>;
  delivery(tx: Tx, tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryRow | undefined>;
  /** A fresh cycle of attempts, due now. */
  restartDelivery(tx: Tx, deliveryId: string): Promise<DeliveryRow>;
  attemptsOf(tx: Tx, deliveryId: string): Promise<AttemptRow[]>;
}

export interface ClaimedDelivery {
  delivery: DeliveryRow;
  endpoint: EndpointRow | undefined;
  /**
   * The row was claimed from a lease that ran out: the replica holding it stopped mid-attempt, after its request
   * may have reached the receiver. That attempt counts (delivery.attempts includes it) and is logged as lost,
   * started when its lease began.
   */
  lostAttempt?: { startedAt: Date };
}

/** What an attempt left on the delivery row. */
export interface AttemptSummary {
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  lastLatencyMs: number;
}

/** What the fan-out writes, in the consumer's transaction (store/deliveries.ts). */
export interface FanOutRecords {
  /** The tenant's live endpoints subscribed to an event type. */
  subscribedEndpoints(
    tx: Tx,
    tenantId: string,
    eventType: string,
  ): Promise<{ webhookId: string; payloadFormat: PayloadFormat }[]>;
  insertDueDeliveries(
    tx: Tx,
    event: { tenantId: string; eventId: string; eventType: string },
    payloads: { webhookId: string; payload: Record<string, unknown> }[],
  ): Promise<void>;
}

/** The persisted delivery schedule the dispatcher works through (store/deliveries.ts). */
/** One try at delivering, as recorded (the endpoint's status and the start of its answer, or the error). */
export interface DeliveryAttempt {
  startedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  responseBody: string | null;
}

export interface DeliveryQueue {
  /** Up to `free` due deliveries, none of the `busy` endpoints', marked delivering for `leaseMs`. */
  claimDue(free: number, busy: string[], leaseMs: number): Promise<ClaimedDelivery[]>;
  /** Milliseconds until the earliest scheduled attempt (0 when one is due); null when none is scheduled. */
  nextDueInMs(): Promise<number | null>;
  /** A claimed delivery back to pending, due now (its attempt was cut short by a shutdown). */
  handBack(deliveryId: string): Promise<void>;
  inTenantTx<T>(tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T>;
  insertAttempt(tx: Tx, delivery: DeliveryRow, attempt: DeliveryAttempt): Promise<void>;
  markDelivered(tx: Tx, delivery: DeliveryRow, last: AttemptSummary): Promise<void>;
  scheduleRetry(tx: Tx, delivery: DeliveryRow, last: AttemptSummary, delayMs: number): Promise<void>;
  /** False when the claim no longer holds the row. */
  markFailed(tx: Tx, delivery: DeliveryRow, last: AttemptSummary): Promise<boolean>;
}

/** What an attempt produced: an HTTP status (any), or an error when no answer came. */
export interface SendOutcome {
  statusCode?: number;
  /** The first RESPONSE_BODY_MAX bytes of the answer. */
  body: string;
  error?: string;
  latencyMs: number;
  /** The attempt was cut short by a shutdown: it does not count. */
  aborted?: boolean;
}

/** POSTs a webhook body (adapters/sender.ts: the address vetted at connect time). */
export interface WebhookSender {
  send(rawUrl: string, body: string, headers: Record<string, string>, signal?: AbortSignal): Promise<SendOutcome>;
  close(): void;
}

/** Refuses, at creation, a URL that is malformed or obviously not allowed (adapters/address-policy.ts). */
export type EndpointUrlCheck = (raw: string) => URL;
