import { Router, type Request } from 'express';
import { z } from 'zod';
import { deliveryStates, isoTimestamp, type webhookV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { requireScope } from '../auth.js';
import { jsonBody, queryParams } from '../validate.js';
import { EXAMPLE, json, jsonRequest, needsKey, noContent, NOT_FOUND, operationsOf } from '../openapi/describe.js';

export type WebhookClient = ClientOf<typeof webhookV1.WebhookService>;

export const createBody = z
  .object({
    url: z.string().trim().min(1).max(2048),
    events: z.array(z.string().trim().min(1).max(100)).min(1).max(20),
    description: z.string().trim().max(500).optional(),
    payload_format: z.enum(['a', 'b']).default('a'),
  })
  .strict();

/** Optional: a rotation without a body keeps the replaced secret signing for a day (the webhook service's default). */
export const rotateBody = z.object({ overlap_seconds: z.number().int().min(0).max(604_800).optional() }).strict();

export const deliveriesQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) });
export const listQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) });

/** The Webhook endpoint resource in the API's names; `secret` only where it is shown (create, rotate). */
export function presentWebhook(endpoint: webhookV1.Endpoint | undefined, secret?: string): Record<string, unknown> {
  if (!endpoint) return {};
  return {
    webhook_id: endpoint.webhookId,
    url: endpoint.url,
    events: endpoint.events,
    ...(endpoint.description ? { description: endpoint.description } : {}),
    payload_format: endpoint.payloadFormat,
    ...(secret ? { secret } : {}),
    created_at: isoTimestamp(endpoint.createdAt),
    ...(endpoint.previousSecretExpiresAt
      ? { previous_secret_expires_at: isoTimestamp(endpoint.previousSecretExpiresAt) }
      : {}),
  };
}

export function presentDelivery(d: webhookV1.Delivery | undefined): Record<string, unknown> {
  if (!d) return {};
  return {
    delivery_id: d.deliveryId,
    webhook_id: d.webhookId,
    event_id: d.eventId,
    event_type: d.eventType,
    status: deliveryStates.fromProto(d.status),
    attempts: d.attempts,
    next_attempt_at: isoTimestamp(d.nextAttemptAt),
    last_status_code: d.lastStatusCode || null,
    last_error: d.lastError || null,
    last_latency_ms: d.attempts > 0 ? d.lastLatencyMs : null,
    created_at: isoTimestamp(d.createdAt),
    delivered_at: isoTimestamp(d.deliveredAt),
    attempt_log: d.attemptLog.map((a) => ({
      n: a.n,
      started_at: isoTimestamp(a.startedAt),
      status_code: a.statusCode || null,
      latency_ms: a.latencyMs,
      error: a.error || null,
    })),
  };
}

export const operations = operationsOf('Webhooks', needsKey('admin'), {
  createWebhook: {
    route: 'post /v1/webhooks',
    summary: 'Register a webhook endpoint',
    body: jsonRequest(createBody, { url: 'https://hooks.example.com/cairn', events: ['job.completed'] }),
    answers: [
      json(201, 'The webhook; its signing secret is shown once', {
        webhook_id: 'wh_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        url: 'https://hooks.example.com/cairn',
        secret: 'whsec_…',
      }),
    ],
    errors: ['cairn.webhook.invalid_url', 'cairn.webhook.unknown_event'],
  },
  listWebhooks: {
    route: 'get /v1/webhooks',
    summary: 'List webhooks',
    auth: needsKey('read'),
    query: listQuery,
    answers: [json(200, 'The webhooks', { webhooks: [] })],
  },
  getWebhook: {
    route: 'get /v1/webhooks/:webhook_id',
    summary: 'Read a webhook',
    auth: needsKey('read'),
    answers: [
      json(200, 'The webhook', {
        webhook_id: 'wh_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        url: 'https://hooks.example.com/cairn',
      }),
    ],
    errors: NOT_FOUND,
  },
  deleteWebhook: {
    route: 'delete /v1/webhooks/:webhook_id',
    summary: 'Delete a webhook',
    answers: [noContent],
    errors: NOT_FOUND,
  },
  rotateWebhookSecret: {
    route: 'post /v1/webhooks/:webhook_id/rotate-secret',
    summary: "Rotate a webhook's signing secret (the replaced one keeps signing for overlap_seconds, default 0)",
    body: jsonRequest(rotateBody, { overlap_seconds: 3600 }),
    answers: [
      json(200, 'The new secret, shown once', {
        webhook_id: 'wh_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        secret: 'whsec_…',
        previous_secret_expires_at: EXAMPLE.time,
      }),
    ],
    errors: ['cairn.not_found', 'cairn.validation.invalid_body'],
  },
  listWebhookDeliveries: {
    route: 'get /v1/webhooks/:webhook_id/deliveries',
    summary: "A webhook's recent deliveries",
    auth: needsKey('read'),
    query: deliveriesQuery,
    answers: [json(200, 'The deliveries', { deliveries: [] })],
    errors: NOT_FOUND,
  },
  redeliverWebhook: {
    route: 'post /v1/webhooks/:webhook_id/deliveries/:delivery_id/redeliver',
    summary: 'Send a delivery again',
    answers: [json(202, 'Queued', { delivery_id: 'whd_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', status: 'pending' })],
    errors: NOT_FOUND,
  },
});

/**
 * Routes on /v1/webhooks: a tenant's receivers and their delivery history. The webhook service owns the data
 * and the rules (allowed events, allowed URLs); every call names the caller's tenant, so another tenant's ids
 * are not found (404).
 */
export function webhookRoutes(deps: { webhooks: WebhookClient }): Router {
  const router = Router();
  const { webhooks } = deps;
  const tenantOf = (req: Request) => req.auth!.tenant.tenantId;
  /** The key making a change: the webhook service records it as the actor of the change's audit entry. */
  const actorKeyOf = (req: Request) => req.auth!.keyId;
  const id = (req: Request, name: string) => String(req.params[name]);

  router.post('/v1/webhooks', requireScope('admin'), async (req, res) => {
    const body = jsonBody(req, createBody);
    const created = await webhooks.createEndpoint({
      tenantId: tenantOf(req),
      url: body.url,
      events: body.events,
      description: body.description ?? '',
      payloadFormat: body.payload_format,
      actorKeyId: actorKeyOf(req),
    });
    res
      .status(201)
      .location(`/v1/webhooks/${created.endpoint?.webhookId ?? ''}`)
      .json(presentWebhook(created.endpoint, created.secret));
  });

  router.get('/v1/webhooks', requireScope('read'), async (req, res) => {
    const { limit } = queryParams(req, listQuery);
    const listed = await webhooks.listEndpoints({ tenantId: tenantOf(req), limit });
    res.json({ data: listed.endpoints.map((e) => presentWebhook(e)) });
  });

  router.get('/v1/webhooks/:webhook_id', requireScope('read'), async (req, res) => {
    const got = await webhooks.getEndpoint({ tenantId: tenantOf(req), webhookId: id(req, 'webhook_id') });
    res.json(presentWebhook(got.endpoint));
  });

  router.delete('/v1/webhooks/:webhook_id', requireScope('admin'), async (req, res) => {
    await webhooks.deleteEndpoint({
      tenantId: tenantOf(req),
      webhookId: id(req, 'webhook_id'),
      actorKeyId: actorKeyOf(req),
    });
    res.status(204).end();
  });

  router.post('/v1/webhooks/:webhook_id/rotate-secret', requireScope('admin'), async (req, res) => {
    // An empty body is a plain rotation; any other must be the JSON object.
    const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
    const { overlap_seconds } = hasBody ? jsonBody(req, rotateBody) : {};
    const rotated = await webhooks.rotateSecret({
      tenantId: tenantOf(req),
      webhookId: id(req, 'webhook_id'),
      actorKeyId: actorKeyOf(req),
      ...(overlap_seconds === undefined ? {} : { overlapSeconds: overlap_seconds }),
    });
    res.json(presentWebhook(rotated.endpoint, rotated.secret));
  });

  router.get('/v1/webhooks/:webhook_id/deliveries', requireScope('read'), async (req, res) => {
    const { limit } = queryParams(req, deliveriesQuery);
    const listed = await webhooks.listDeliveries({ tenantId: tenantOf(req), webhookId: id(req, 'webhook_id'), limit });
    res.json({ data: listed.deliveries.map(presentDelivery) });
  });

  router.post('/v1/webhooks/:webhook_id/deliveries/:delivery_id/redeliver', requireScope('admin'), async (req, res) => {
    const again = await webhooks.redeliver({
      tenantId: tenantOf(req),
      webhookId: id(req, 'webhook_id'),
      deliveryId: id(req, 'delivery_id'),
    });
    res.status(202).json(presentDelivery(again.delivery));
  });

  return router;
}
