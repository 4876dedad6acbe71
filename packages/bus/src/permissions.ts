import type { EventType } from '@cairn/events';

/**
 * The event types each service may publish: NATS refuses any other subject from its user, so a compromised
 * pod cannot forge another service's facts (a `certificate.revoked` from the gateway, an `asset.signed` from
 * the webhook service). Keyed by service name (packages/config SERVICE_NAMES; a test keeps them in step).
 */
export const EVENT_PUBLISHERS: Readonly<Record<string, ReadonlyArray<EventType>>> = {
  gateway: [],
  signer: [
    'asset.signed',
    'manifest.signed',
    'job.completed',
    'job.failed',
    'certificate.revoked',
    'certificate.expiring',
    'admin.changed',
  ],
  verifier: ['asset.verified', 'verification.completed', 'job.failed', 'admin.changed'],
  watermark: [],
  softbinding: ['asset.lookup'],
  anchor: ['anchor.confirmed'],
  billing: ['billing.quota_warning', 'billing.quota_exceeded', 'billing.spending_cap_warning'],
  audit: [],
  webhook: ['webhook.failed', 'admin.changed'],
  tenant: ['tenant.created', 'key.created', 'key.revoked', 'key.expiring', 'settings.changed', 'admin.changed'],
};

/** Work queues (bus WorkQueue) a service owns: their stream and subject are its alone. */
const WORK_QUEUES: Readonly<Record<string, ReadonlyArray<string>>> = { signer: ['sign'], verifier: ['verify'] };

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

export interface StreamNames {
  stream: string;
  subjectPrefix: string;
}

/** Where a service's request replies arrive (its connection's inbox prefix): no other user may listen there. */
export function inboxPrefix(service: string): string {
  return `_INBOX_${service}`;
}

/**
 * What one service's NATS user may do: publish its own event subjects and the JetStream API calls the bus
 * makes (stream look-up and creation, its consumers, acknowledgements), and hear only its own inbox. Stream
 * and consumer deletion, purges and direct gets are absent, so no service can erase the others' events.
 */
export function natsPermissions(service: string, names: StreamNames): NatsPermissions {
  const events = EVENT_PUBLISHERS[service];
  if (!events) throw new Error(`no NATS permissions for unknown service ${service}`);
  const streams = [
    names.stream,
    ...(WORK_QUEUES[service] ?? []).map((queue) => `${names.stream}_WORK_${queue.toUpperCase()}`),
  ];
  const publish = [
    ...events.map((type) => `${names.subjectPrefix}.${type}`),
    ...(WORK_QUEUES[service] ?? []).map((queue) => `work.${names.subjectPrefix}.${queue}`),
    '$JS.API.INFO',
    ...streams.flatMap((stream) => [
      `$JS.API.STREAM.INFO.${stream}`,
      `$JS.API.STREAM.CREATE.${stream}`,
      // Brings an existing stream to NATS_STREAM_REPLICAS / NATS_STREAM_MAX_BYTES at start (streams.ts).
      `$JS.API.STREAM.UPDATE.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.>`,
      `$JS.API.CONSUMER.INFO.${stream}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
      `$JS.ACK.${stream}.>`,
    ]),
  ];
  return { publish, subscribe: [`${inboxPrefix(service)}.>`] };
}

/**
 * The nats-server `authorization` block for the fleet: one user per service, its password read from the
 * server's environment (`CAIRN_NATS_PASSWORD_<SERVICE>`), so the file holds no secret. The chart ships it
 * (charts/cairn/files/nats-authorization.conf); a test keeps the file equal to this rendering.
 */
export function natsAuthorizationConfig(services: ReadonlyArray<string>, names: StreamNames): string {
  const quote = (subject: string) => JSON.stringify(subject);
  const users = services.map((service) => {
    const { publish, subscribe } = natsPermissions(service, names);
    return [
      `    {`,
      `      user: ${quote(`cairn-${service}`)}`,
      `      password: $${natsPasswordVar(service)}`,
      `      permissions: {`,
      `        publish: { allow: [${publish.map(quote).join(', ')}] }`,
      `        subscribe: { allow: [${subscribe.map(quote).join(', ')}] }`,
      `      }`,
      `    }`,
    ].join('\n');
  });
  return [
    `# Generated from packages/bus/src/permissions.ts (stream ${names.stream}, subjects ${names.subjectPrefix}.>); test/deployment.test.ts keeps it equal.`,
    `authorization {`,
    `  users = [`,
    users.join(',\n'),
    `  ]`,
    `}`,
    ``,
  ].join('\n');
}

/** The nats-server environment variable holding a service's password. */
export function natsPasswordVar(service: string): string {
  return `CAIRN_NATS_PASSWORD_${service.toUpperCase()}`;
}
