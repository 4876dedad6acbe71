import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SERVICE_NAMES, grpcAddrVar } from '@cairn/config';
import { auditV1 } from '@cairn/proto';
import { createClient, readTlsFiles, serviceTlsName } from '@cairn/rpc';
import { waitFor } from '@cairn/testing';
import { distinctImage } from './chaos.js';
import type { ReplicaFleet } from './replica-fleet.js';
import { multipart } from './multipart.js';

/**
 * The replica-kill run: sign, verify, lookup and webhook traffic spread over every gateway replica while
 * one replica of each service in turn is SIGKILLed and started again; then what every invariant needs read back.
 * The client retries as the documented policy says (the SDK's: 429 and an idempotent call's 503, with the same
 * Idempotency-Key), plus what a load balancer in front of the gateways adds: a request whose connection a killed
 * gateway cut goes again to the other one, and a sign whose key is still claimed by the dead one (409
 * `cairn.idempotency.in_progress`) is asked again until the claim lapses.
 */
/**
 * What the run sets beside the sandbox: leases short enough that a sign a killed replica held is taken over within
 * the client's retries (180 s by default), quick webhook retries and reservation expiry, and a max connection age
 * that makes every caller reconnect during the run.
 */
export const REPLICA_KILL_ENV: NodeJS.ProcessEnv = {
  LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'warn',
  // Twenty processes share the machine's Postgres (100 connections) with other suites.
  DATABASE_POOL_MAX: '3',
  SIGN_CONCURRENCY_PER_TENANT: '100',
  SIGN_CLAIM_LEASE_SECONDS: '15',
  ASSET_CLAIM_LEASE_SECONDS: '15',
  BILLING_RESERVATION_TTL_SECONDS: '20',
  BILLING_SWEEP_INTERVAL_MS: '2000',
  WEBHOOK_RETRY_SCALE: '0.01',
  WEBHOOK_POLL_INTERVAL_MS: '250',
  ANCHOR_BATCH_MAX_AGE_MS: '2000',
  GRPC_MAX_CONNECTION_AGE_MS: '20000',
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: '5000',
};

export interface ReplicaKillOptions {
  /** Signs to make at least (the run also lasts until every kill is done). */
  minSigns: number;
  /** How long a killed replica stays down before it is started again. */
  downMs: number;
  log?: (line: string) => void;
}

export interface Attempted {
  status: number;
  code?: string;
}

export interface SignRecord {
  key: string;
  assetId?: string;
  /** Every asset id an answer 200 named for this key (one, when nothing was signed twice). */
  assetIds: Set<string>;
  final: Attempted;
  verdict?: string;
}

export interface ReplicaKillFigures {
  requests: number;
  /** Answers and cut connections that a retry then cured, by status (0: connection cut). */
  cured: Record<string, number>;
  retries: number;
  /** Calls whose last answer, after every retry, was not a success. */
  uncured: Array<{ what: string; final: Attempted }>;
  signs: SignRecord[];
  lookups: number;
  kills: string[];
  /** Per service, each replica's count of calls and events handled. */
  shares: Record<string, number[]>;
  webhook: { received: number; distinct: number; deliveries: number; delivered: number; extraAttempts: number };
  billing: Array<{ meter: string; status: string; count: number }>;
  assetsStored: number;
  anchor: { batches: number; anchored: number; leaves: number; distinctDigests: number };
  audit: { intact: boolean; entriesChecked: number };
}

const RETRIED = new Set([0, 429, 502, 503, 504]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  body: Record<string, unknown>;
  bytes?: Buffer;
}

async function answer(res: Response): Promise<Answer> {
  const type = res.headers.get('content-type') ?? '';
  if (type.includes('json')) return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  return { status: res.status, body: {}, bytes: Buffer.from(await res.arrayBuffer()) };
}

export async function runReplicaKill(fleet: ReplicaFleet, options: ReplicaKillOptions): Promise<ReplicaKillFigures> {
  const log = options.log ?? (() => undefined);
  const gateways = fleet.gateways;
  let requests = 0;
  let retries = 0;
  const cured: Record<string, number> = {};
  const uncured: ReplicaKillFigures['uncured'] = [];

  /** One API call with the client's retries, starting on gateway `start` and moving to the next on each retry. */
  const call = async (
    what: string,
    start: number,
    path: string,
    init: () => RequestInit,
  ): Promise<{ status: number; body: Record<string, unknown>; bytes?: Buffer }> => {
    const seen: Attempted[] = [];
    for (let attempt = 0; ; attempt++) {
      requests++;
      const base = gateways[(start + attempt) % gateways.length]!;
      const got: Answer = await fetch(base + path, init())
        .then(answer)
        .catch(() => ({ status: 0, body: {} })); // the connection was cut (a gateway killed): status 0, retried
      const code = typeof got.body.code === 'string' ? got.body.code : undefined;
      const again = RETRIED.has(got.status) || (got.status === 409 && code === 'cairn.idempotency.in_progress');
      if (!again || attempt >= 80) {
        for (const s of seen) cured[String(s.status)] = (cured[String(s.status)] ?? 0) + (got.status < 300 ? 1 : 0);
        if (got.status >= 300) uncured.push({ what, final: { status: got.status, ...(code ? { code } : {}) } });
        return got;
      }
      seen.push({ status: got.status, ...(code ? { code } : {}) });
      retries++;
      await sleep(500);
    }
  };

  // A tenant, and a webhook receiver registered through the API.
  const onboarded = await call('onboard', 0, '/v1/onboard', () => ({
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'replica-kill-onboard' },
    body: JSON.stringify({
      email: 'replicas@example.com',
      tenant_name: 'Replicas',
      plan: 'growth',
      payment_method_id: 'pm_card_visa',
    }),
  }));
  if (onboarded.status !== 201) throw new Error(`onboard: ${onboarded.status} ${JSON.stringify(onboarded.body)}`);
  const tenantId = String(onboarded.body.tenant_id);
  const auth = { authorization: `Bearer ${String(onboarded.body.api_key)}` };

  const received: string[] = [];
  const receiver: Server = createServer((req, res) => {
    const id = req.headers['cairn-event-id'];
    req.resume();
    req.on('end', () => {
      if (typeof id === 'string') received.push(id);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  try {
    const hook = await call('webhook create', 1, '/v1/webhooks', () => ({
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiverUrl, events: ['manifest.signed'] }),
    }));
    if (hook.status !== 201) throw new Error(`webhook create: ${hook.status} ${JSON.stringify(hook.body)}`);

    // Traffic until every kill is done and at least minSigns signs are.
    const signs: SignRecord[] = [];
    let lookups = 0;
    let killsDone = false;
    let n = 0;
    const worker = async () => {
      while (!killsDone || signs.length < options.minSigns) {
        const i = n++;
        const key = crypto.randomUUID();
        const bytes = await distinctImage();
        const record: SignRecord = { key, assetIds: new Set(), final: { status: 0 } };
        signs.push(record);
        const signed = await call(`sign ${key}`, i, '/v1/sign', () => ({
          method: 'POST',
          headers: { ...auth, 'idempotency-key': key },
          body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes, name: 'a.png' }),
        }));
        record.final = { status: signed.status };
        if (signed.status !== 200) continue;
        record.assetId = String(signed.body.asset_id);
        record.assetIds.add(record.assetId);
        // The same sign again (a client that lost the answer): the recorded one, never a second asset.
        const replay = await call(`sign replay ${key}`, i + 1, '/v1/sign', () => ({
          method: 'POST',
          headers: { ...auth, 'idempotency-key': key },
          body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes, name: 'a.png' }),
        }));
        if (replay.status === 200) record.assetIds.add(String(replay.body.asset_id));
        const content = await call(`content ${record.assetId}`, i + 1, `/v1/assets/${record.assetId}/content`, () => ({
          headers: auth,
        }));
        if (content.status !== 200 || !content.bytes) continue;
        const file = content.bytes;
        const verified = await call(`verify ${record.assetId}`, i, '/v1/verify', () => ({
          method: 'POST',
          headers: auth,
          body: multipart({}, { field: 'file', bytes: file, name: 'signed.png' }),
        }));
        if (typeof verified.body.status === 'string') record.verdict = verified.body.status;
        const looked = await call(`lookup ${record.assetId}`, i + 1, '/v1/lookup', () => ({
          method: 'POST',
          headers: auth,
          body: multipart({}, { field: 'file', bytes: file, name: 'signed.png' }),
        }));
        if (looked.status === 200) lookups++;
      }
    };

    const kills: string[] = [];
    const killer = async () => {
      // Some traffic first, so every replica has connections and work in flight when its turn comes.
      await waitFor('the first signs', () => signs.filter((s) => s.final.status === 200).length >= 2, 120_000, 200);
      for (const [index, name] of SERVICE_NAMES.entries()) {
        const label = fleet.plan.replicas > 1 ? `${name}-${index % fleet.plan.replicas}` : name;
        log(`SIGKILL ${label}`);
        await fleet.kill(label);
        kills.push(label);
        await sleep(options.downMs);
        await fleet.startReplica(label);
        log(`${label} ready again`);
      }
      killsDone = true;
    };
    await Promise.all([killer(), worker(), worker()]);

    // What settles after the traffic: webhook deliveries, anchor batches, reservations.
    const admin = await fleet.sandbox.adminClient();
    try {
      const signedIds = signs.filter((s) => s.assetId).length;
      const deliveries = await waitFor(
        'every webhook delivery delivered',
        async () => {
          const { rows } = await admin.query<{ total: number; delivered: number; extra: number }>(
            `select count(*)::int as total, count(*) filter (where status = 'delivered')::int as delivered,
                    coalesce(sum(greatest(attempts - 1, 0)), 0)::int as extra
               from webhook.deliveries where tenant_id = $1`,
            [tenantId],
          );
          const row = rows[0]!;
          return row.total >= signedIds && row.delivered === row.total ? row : undefined;
        },
        90_000,
        500,
      ).catch(async () => {
        const { rows } = await admin.query(
          'select status, attempts, last_error from webhook.deliveries where tenant_id = $1 and status <> $2',
          [tenantId, 'delivered'],
        );
        throw new Error(`webhook deliveries not all delivered: ${JSON.stringify(rows)}`);
      });
      const anchor = await waitFor(
        'every anchor batch anchored',
        async () => {
          const { rows } = await admin.query<{ batches: number; anchored: number }>(
            `select count(*)::int as batches, count(*) filter (where status = 'anchored')::int as anchored
               from anchor.batches`,
          );
          const { rows: leafRows } = await admin.query<{ leaves: number; digests: number }>(
            'select count(*)::int as leaves, count(distinct manifest_digest)::int as digests from anchor.leaves',
          );
          const row = { ...rows[0]!, ...leafRows[0]! };
          return row.leaves >= signedIds && row.anchored === row.batches ? row : undefined;
        },
        90_000,
        500,
      );
      // Billing commits a sign from its asset.signed. A message a killed billing replica held comes back only after
      // the bus's ack wait (30 s), by when the expiry sweep (20 s here) may have released its reservation: nothing is
      // left reserved, yet the commit (which bills a released reservation all the same) is still on its way. So the
      // wait is for every sign committed too; past the deadline the last reading is what the assertions judge.
      let settlement: Array<{ meter: string; status: string; count: number }> = [];
      const billing = await waitFor(
        'every reservation settled and every sign committed',
        async () => {
          const { rows } = await admin.query<{ meter: string; status: string; count: number }>(
            `select meter, status, count(*)::int as count from billing.reservations where tenant_id = $1
              group by meter, status order by meter, status`,
            [tenantId],
          );
          settlement = rows;
          const committed = rows.find((r) => r.meter === 'image_sign' && r.status === 'committed')?.count ?? 0;
          return rows.some((r) => r.status === 'reserved') || committed < signedIds ? undefined : rows;
        },
        90_000,
        500,
      ).catch(() => settlement);
      const { rows: stored } = await admin.query<{ count: number }>(
        'select count(*)::int as count from signer.assets where tenant_id = $1',
        [tenantId],
      );

      // The audit service's own check of the tenant's chain, asked as the gateway would (mutual TLS).
      const audit = createClient(auditV1.AuditService, String(fleet.plan.services[0]!.env[grpcAddrVar('audit')]), {
        tls: readTlsFiles(fleet.tls.gateway!),
        serverName: serviceTlsName('audit'),
      });
      let chain: { intact: boolean; entriesChecked: number };
      try {
        const verdict = await audit.verifyChain({ tenantId });
        chain = { intact: verdict.intact, entriesChecked: Number(verdict.entriesChecked) };
      } finally {
        audit.close();
      }

      const shares: Record<string, number[]> = {};
      for (const name of SERVICE_NAMES) {
        shares[name] = [];
        for (const s of fleet.plan.services.filter((p) => p.name === name)) {
          const counts = await fleet.handledCalls(s.label);
          shares[name].push([...counts.values()].reduce((a, b) => a + b, 0));
        }
      }
      return {
        requests,
        cured,
        retries,
        uncured,
        signs,
        lookups,
        kills,
        shares,
        webhook: {
          received: received.length,
          distinct: new Set(received).size,
          deliveries: deliveries.total,
          delivered: deliveries.delivered,
          extraAttempts: deliveries.extra,
        },
        billing,
        assetsStored: stored[0]!.count,
        anchor: {
          batches: anchor.batches,
          anchored: anchor.anchored,
          leaves: anchor.leaves,
          distinctDigests: anchor.digests,
        },
        audit: chain,
      };
    } finally {
      await admin.end();
    }
  } finally {
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}

/** The figures as lines: requests, retries, what they cured, per-replica shares. */
export function describeFigures(f: ReplicaKillFigures): string {
  const signed = f.signs.filter((s) => s.assetId).length;
  const lines = [
    `requests ${f.requests} (retries ${f.retries}; cured by a retry, by first status: ${JSON.stringify(f.cured)}; uncured ${f.uncured.length})`,
    `signs ${f.signs.length}, answered 200 ${signed}, assets stored ${f.assetsStored}; verifies matching ${f.signs.filter((s) => s.verdict === 'verified_manifest_and_watermark_match').length}; lookups ${f.lookups}`,
    `killed (SIGKILL, then started again): ${f.kills.join(', ')}`,
    `webhook: ${f.webhook.received} received (${f.webhook.distinct} distinct event ids), ${f.webhook.delivered}/${f.webhook.deliveries} deliveries delivered, ${f.webhook.extraAttempts} attempts beyond the first`,
    `billing reservations: ${f.billing.map((b) => `${b.meter} ${b.status} ${b.count}`).join(', ')}`,
    `anchor: ${f.anchor.anchored}/${f.anchor.batches} batches anchored, ${f.anchor.leaves} leaves (${f.anchor.distinctDigests} distinct digests)`,
    `audit chain: ${f.audit.intact ? 'intact' : 'BROKEN'} (${f.audit.entriesChecked} entries checked)`,
    'per-replica share of calls and events handled:',
    ...Object.entries(f.shares).map(([name, counts]) => {
      const total = counts.reduce((a, b) => a + b, 0);
      return `  ${name.padEnd(12)} ${counts.map((c) => `${c} (${total ? Math.round((100 * c) / total) : 0} %)`).join('  ')}`;
    }),
  ];
  return lines.join('\n');
}
