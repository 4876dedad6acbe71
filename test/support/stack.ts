import { afterAll, beforeAll, expect } from '@jest/globals';
import type { DestinationStream } from 'pino';
import { startService, type RunningService } from '@cairn/runtime';
import {
  apiRequester,
  createSandbox,
  databaseUrl,
  makeDevPki,
  PG_ADMIN_URL,
  type ApiRequest,
  type Sandbox,
  type TlsFiles,
} from '@cairn/testing';
import { databaseRole, grpcAddrVar, SERVICE_NAMES, type ServiceName } from '../../packages/config/src/index.js';
import { anchorService } from '../../services/anchor/src/service.js';
import { auditService } from '../../services/audit/src/service.js';
import { billingService } from '../../services/billing/src/service.js';
import { gatewayService } from '../../services/gateway/src/service.js';
import { tenantService } from '../../services/tenant/src/service.js';
import { signerService } from '../../services/signer/src/service.js';
import { softbindingService } from '../../services/softbinding/src/service.js';
import { verifierService } from '../../services/verifier/src/service.js';
import { watermarkService } from '../../services/watermark/src/service.js';
import { webhookService } from '../../services/webhook/src/service.js';
import { freePort } from '@cairn/testing';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectGarbage } from '../../services/signer/test/c2pa-fixtures.js';
import { FLEET_ORDER, provisionFleetRoles } from './fleet-setup.js';
import { multipart } from './multipart.js';

export { multipart };

type Definition = Parameters<typeof startService>[0];
const DEFINITIONS: Record<ServiceName, (env: NodeJS.ProcessEnv) => Definition> = {
  gateway: gatewayService,
  signer: signerService,
  verifier: verifierService,
  watermark: watermarkService,
  softbinding: softbindingService,
  anchor: anchorService,
  billing: billingService,
  audit: auditService,
  webhook: webhookService,
  tenant: tenantService,
};

/** Starts one service of the fleet in-process, optionally capturing its log lines. */
export function startFleetService(
  name: ServiceName,
  env: NodeJS.ProcessEnv,
  logDestination?: DestinationStream,
): Promise<RunningService> {
  return startService({ ...DEFINITIONS[name](env), ...(logDestination ? { logDestination } : {}) });
}

export interface Stack {
  sandbox: Sandbox;
  env: NodeJS.ProcessEnv;
  /** With StackOptions.tls: each service's certificate files (and the CA's). */
  tls?: Record<string, TlsFiles>;
  services: Map<ServiceName, RunningService>;
  baseUrl: string;
  request: ApiRequest;
  /** Stops one service (e.g. to take a signal down) and starts it again later with `restart`. */
  stopService(name: ServiceName): Promise<void>;
  restart(name: ServiceName): Promise<RunningService>;
  stop(): Promise<void>;
}

/**
 * Several services of the fleet in one sandbox, each on a port chosen up front so peers find each other.
 * The gateway's public base URL is its real address, so manifest_uri and verifier_url work.
 */
export interface StackOptions {
  /** Mutual TLS between the services, each with its own certificate of a CA made for this stack (as `npm run up`). */
  tls?: boolean;
  /**
   * Services run elsewhere (their own processes, test/support/service-processes.ts) at the addresses the
   * overrides give: never started here, nor added as another service's companion.
   */
  external?: ServiceName[];
}

export async function startStack(
  names: ServiceName[],
  overrides: NodeJS.ProcessEnv = {},
  logs?: Partial<Record<ServiceName, DestinationStream>>,
  options: StackOptions = {},
): Promise<Stack> {
  // The gateway meters every sign and authenticated verify through billing: a stack with it runs billing too.
  if (names.includes('gateway') && !names.includes('billing')) names = [...names, 'billing'];
  // The gateway authenticates through the tenant service; billing and audit ask it for a tenant's plan.
  if (names.some((n) => n === 'gateway' || n === 'billing' || n === 'audit') && !names.includes('tenant'))
    names = [...names, 'tenant'];
  // The verifier asks the soft-binding service when nothing else leads to a record.
  if (names.includes('verifier') && !names.includes('softbinding')) names = [...names, 'softbinding'];
  // ...and the anchor service for its anchor signal. Without a chain of the test's own (ANCHOR_RPC_URL), it
  // points at port 1, where nothing listens: batches then stay queued (never written to any chain, least of all
  // a development node on 8545) and verifies report the anchor as pending.
  if (names.includes('verifier') && !names.includes('anchor') && !options.external?.includes('anchor')) {
    names = [...names, 'anchor'];
    if (!overrides.ANCHOR_RPC_URL) overrides = { ...overrides, ANCHOR_RPC_URL: 'http://127.0.0.1:1' };
  }
  if (options.external) names = names.filter((name) => !options.external!.includes(name));
  const sandbox = await createSandbox(overrides);
  await provisionFleetRoles(sandbox.databaseName);
  const ports = new Map<ServiceName, number>();
  for (const name of names) ports.set(name, await freePort());
  const httpPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...sandbox.env,
    HTTP_PORT: String(httpPort),
    PUBLIC_BASE_URL: `http://127.0.0.1:${httpPort}`,
  };
  for (const [name, port] of ports) env[grpcAddrVar(name)] = `127.0.0.1:${port}`;
  const tls: Record<string, TlsFiles> | undefined = options.tls
    ? await makeDevPki(join(tmpdir(), `cairn-test-tls-${sandbox.id}`), SERVICE_NAMES)
    : undefined;
  const services = new Map<ServiceName, RunningService>();
  // `env` stays live: a test may change it before restarting a service.
  const start = async (name: ServiceName) => {
    const ownUrl = overrides.DATABASE_URL ?? databaseUrl(PG_ADMIN_URL, sandbox.databaseName, databaseRole(name));
    const own = tls?.[name];
    const identity = own ? { GRPC_TLS_CA: own.ca, GRPC_TLS_CERT: own.cert, GRPC_TLS_KEY: own.key } : {};
    const service = await startFleetService(
      name,
      { ...env, DATABASE_URL: ownUrl, ...identity, GRPC_PORT: String(ports.get(name)) },
      logs?.[name],
    );
    services.set(name, service);
    return service;
  };
  const order = FLEET_ORDER;
  for (const name of order) if (names.includes(name)) await start(name);
  const baseUrl = `http://127.0.0.1:${httpPort}`;
  return {
    sandbox,
    env,
    ...(tls ? { tls } : {}),
    services,
    baseUrl,
    request: apiRequester(baseUrl),
    stopService: async (name) => {
      await services.get(name)?.stop();
      services.delete(name);
    },
    restart: start,
    stop: async () => {
      for (const name of [...order].reverse()) await services.get(name)?.stop();
      await sandbox.dispose();
      if (tls) await rm(join(tmpdir(), `cairn-test-tls-${sandbox.id}`), { recursive: true, force: true });
      // c2pa-node's callback signers hold a handle until collected: release them so the process can exit.
      collectGarbage();
    },
  };
}

/** Onboards a tenant through the API and returns its admin key. */
export async function onboard(
  stack: Stack,
  plan: 'free' | 'developer' | 'growth' = 'developer',
): Promise<{ tenant_id: string; api_key: string }> {
  const res = await stack.request('/v1/onboard', {
    method: 'POST',
    headers: { 'idempotency-key': crypto.randomUUID() },
    json: {
      email: 'e2e@example.com',
      tenant_name: 'E2E',
      plan,
      ...(plan === 'free' ? {} : { payment_method_id: 'pm_card_visa' }),
    },
  });
  if (res.status !== 201) throw new Error(`onboard: ${res.status} ${await res.text()}`);
  return (await res.json()) as { tenant_id: string; api_key: string };
}

/**
 * Onboards a tenant and makes it an enterprise one (a plan no self-service onboarding gives) with a rate limit of
 * 100 requests a second, as an operator does in the database.
 */
/**
 * A stack of `names` started before the tests of the file (or describe block) that calls this and stopped after
 * them, with one developer tenant onboarded. Filled in place, so the caller holds the one object from load on.
 */
export function stackForFile(
  names: ServiceName[],
  overrides: NodeJS.ProcessEnv = {},
): { stack: Stack; tenant: { tenant_id: string; api_key: string } } {
  const held = {} as { stack: Stack; tenant: { tenant_id: string; api_key: string } };
  beforeAll(async () => {
    held.stack = await startStack(names, overrides);
    held.tenant = await onboard(held.stack);
  }, 120_000);
  afterAll(async () => {
    await held.stack?.stop();
  });
  return held;
}

export async function onboardEnterprise(stack: Stack): Promise<{ tenant_id: string; api_key: string }> {
  const tenant = await onboard(stack, 'free');
  const admin = await stack.sandbox.adminClient();
  try {
    await admin.query(`update tenant.tenants set plan = 'enterprise', rate_limit_rps = 100 where tenant_id = $1`, [
      tenant.tenant_id,
    ]);
  } finally {
    await admin.end();
  }
  return tenant;
}

/** One file for `POST /v1/sign`: its recipe, the generator's metadata if any, and the file itself. */
export interface SignUpload {
  recipe: string;
  metadata?: Record<string, string>;
  bytes: Buffer;
  name: string;
  /** The part's content type (application/octet-stream when not given). */
  type?: string;
  /** Further form fields after the recipe and metadata (a BYOK sign names its `signing_credential`). */
  fields?: Record<string, string>;
}

/** `POST /v1/sign` of one file with a fresh Idempotency-Key; the caller judges the answer. */
export function postSign(stack: Pick<Stack, 'request'>, apiKey: string, upload: SignUpload): Promise<Response> {
  return stack.request('/v1/sign', {
    method: 'POST',
    key: apiKey,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart(
      {
        recipe: upload.recipe,
        ...(upload.metadata ? { metadata: JSON.stringify(upload.metadata) } : {}),
        ...upload.fields,
      },
      { field: 'asset', bytes: upload.bytes, name: upload.name, ...(upload.type ? { type: upload.type } : {}) },
    ),
  });
}

/** Signs `bytes` under `recipe` through `POST /v1/sign` (it must answer 200) and downloads the signed content. */
export async function signAndFetch<Signed extends { asset_id: string } = { asset_id: string }>(
  stack: Stack,
  apiKey: string,
  upload: SignUpload,
): Promise<{ signed: Signed; signedBytes: Buffer }> {
  const res = await postSign(stack, apiKey, upload);
  if (res.status !== 200) throw new Error(`sign: ${res.status} ${await res.text()}`);
  const signed = (await res.json()) as Signed;
  const signedBytes = Buffer.from(
    await (await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: apiKey })).arrayBuffer(),
  );
  return { signed, signedBytes };
}

/**
 * `POST /v1/verify` of a file, public unless `key` is given; it must answer 200. `Result` is what the caller reads
 * of the verdict.
 */
export async function verifyUpload<Result>(
  stack: Pick<Stack, 'request'>,
  bytes: Buffer,
  name: string,
  key?: string,
): Promise<Result> {
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    ...(key ? { key } : {}),
    body: multipart({}, { field: 'file', bytes, name }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Result;
}

/** afterAll's clean-up of a stack and a scratch directory, either of which beforeAll may not have made. */
export async function stopAndRemove(stack: Stack | undefined, dir: string | undefined): Promise<void> {
  await stack?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}
