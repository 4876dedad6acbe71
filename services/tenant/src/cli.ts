import { parseArgs } from 'node:util';
import { z } from 'zod';
import { Bus, inboxPrefix } from '@cairn/bus';
import { commonEnvShape, databaseRole, DEFAULT_GATEWAY_HTTP_PORT, loadConfig } from '@cairn/config';
import { createDb, createPool, migrateService } from '@cairn/db';
import { pino } from 'pino';
import { createLogger } from '@cairn/logging';
import { Outbox } from '@cairn/runtime';
import { ServiceMetrics } from '@cairn/telemetry';
import { resolveDataKey, tenantConfigShape } from './config.js';
import { Sealer } from '@cairn/sealing';
import { migrationsFolder } from './service.js';
import { TenantStore } from './store/tenants.js';

const USAGE = `Usage: pnpm cairn admin bootstrap --name <tenant name> [--email <address>] [--json]

Creates an enterprise primary tenant and prints its admin API key once. Reads DATABASE_URL, NATS_URL (as the
tenant service does, with its identity: DATABASE_URL defaults to the local fleet's cairn_tenant role, NATS_USER
and NATS_PASSWORD are the tenant service's). The key is shown only here: store it in a secret manager.`;

async function bootstrap(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { name: { type: 'string' }, email: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const name = z.string().trim().min(1).max(200).safeParse(values.name);
  if (!name.success) {
    process.stderr.write(`--name is required (1-200 characters).\n\n${USAGE}\n`);
    return 2;
  }
  const config = loadConfig({ ...commonEnvShape, ...tenantConfigShape });
  // It writes the tenant service's tables, so it is the tenant service: its local role unless DATABASE_URL says otherwise.
  const databaseUrl = process.env.DATABASE_URL
    ? config.DATABASE_URL
    : Object.assign(new URL(config.DATABASE_URL), { username: databaseRole('tenant') }).toString();
  const pool = createPool(databaseUrl, 2);
  const bus = await Bus.connect({
    url: config.NATS_URL,
    stream: config.NATS_STREAM,
    subjectPrefix: config.NATS_SUBJECT_PREFIX,
    name: 'cairn-cli',
    user: config.NATS_USER,
    password: config.NATS_PASSWORD,
    token: config.NATS_TOKEN,
    inboxPrefix: inboxPrefix('tenant'),
    // Same limits as the services: the first to start (this tool, at bootstrap) creates the stream for them.
    limits: { replicas: config.NATS_STREAM_REPLICAS, maxBytes: config.NATS_STREAM_MAX_BYTES },
  });
  try {
    await migrateService(pool, 'tenant', migrationsFolder);
    // stdout carries the answer (--json is parsed by scripts); diagnostics go to stderr.
    const logger = createLogger({ service: 'cli', level: 'warn', destination: pino.destination(2) });
    const outbox = new Outbox(
      createDb(pool),
      'tenant',
      bus,
      logger,
      new ServiceMetrics('cli', { defaultMetrics: false }),
    );
    const store = new TenantStore(
      createDb(pool),
      outbox,
      new Sealer(resolveDataKey(config.CAIRN_ENV, config.CAIRN_DATA_KEY), 'CAIRN_DATA_KEY'),
    );
    // The gateway's public address, for the hint only (the gateway's own setting, read the same way).
    const publicBaseUrl = process.env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${DEFAULT_GATEWAY_HTTP_PORT}`;
    const { tenant, key } = await store.bootstrap({ name: name.data, email: values.email ?? null });
    await outbox.flush();
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ tenant_id: tenant.tenantId, name: tenant.name, plan: tenant.plan, key_id: key.key_id, api_key: key.api_key })}\n`,
      );
    } else {
      process.stdout.write(
        [
          `Created enterprise tenant "${tenant.name}" (${tenant.tenantId}).`,
          `Admin API key (shown once, store it now):`,
          ``,
          `  ${key.api_key}`,
          ``,
          `Try it: curl -H "Authorization: Bearer ${key.api_key}" ${publicBaseUrl}/v1/recipes`,
          ``,
        ].join('\n'),
      );
    }
    return 0;
  } finally {
    await bus.close();
    await pool.end();
  }
}

async function main(argv: string[]): Promise<number> {
  const [area, command, ...rest] = argv;
  if (area === 'admin' && command === 'bootstrap') return bootstrap(rest);
  process.stderr.write(`${USAGE}\n`);
  return area === '--help' || area === '-h' ? 0 : 2;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`cairn: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
