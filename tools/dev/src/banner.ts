import { commonEnvShape, loadConfig, type CommonEnv } from '@cairn/config';
import type { FleetPlan } from './plan.js';

function shellQuote(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The CLI reads the same settings as the services: name the ones this fleet runs with that are not its defaults. */
function cliEnvPrefix(config: CommonEnv, defaults: CommonEnv, publicBaseUrl: string): string {
  const vars: Array<[string, string]> = [];
  if (config.DATABASE_URL !== defaults.DATABASE_URL) vars.push(['DATABASE_URL', config.DATABASE_URL]);
  if (config.NATS_URL !== defaults.NATS_URL) vars.push(['NATS_URL', config.NATS_URL]);
  if (config.NATS_STREAM !== defaults.NATS_STREAM) vars.push(['NATS_STREAM', config.NATS_STREAM]);
  if (config.NATS_SUBJECT_PREFIX !== defaults.NATS_SUBJECT_PREFIX)
    vars.push(['NATS_SUBJECT_PREFIX', config.NATS_SUBJECT_PREFIX]);
  if (publicBaseUrl !== 'http://127.0.0.1:8080') vars.push(['PUBLIC_BASE_URL', publicBaseUrl]);
  return vars.map(([k, v]) => `${k}=${shellQuote(v)} `).join('');
}

/** What is running where, and how to get an API key. */
export function banner(
  plan: FleetPlan,
  options: { fromSource: boolean },
  config: CommonEnv,
  dataKeySource: string,
  width: number,
): string {
  const defaults = loadConfig(commonEnvShape, {});
  const gateway = `http://${plan.host}:${plan.httpPort}`;
  const rows = plan.services.map(
    (s) =>
      `    ${s.label.padEnd(width)}  ${`${plan.host}:${s.grpcPort}`.padEnd(17)}  http://${plan.host}:${s.opsPort}/metrics`,
  );
  const replicas = plan.httpPorts.slice(1).map((port) => `http://${plan.host}:${port}`);
  const onboard = `curl -X POST ${plan.publicBaseUrl}/v1/onboard -H 'content-type: application/json' -H "idempotency-key: $(cat /proc/sys/kernel/random/uuid)" -d '{"email":"you@example.com","tenant_name":"You","plan":"free"}'`;
  const redacted = config.DATABASE_URL.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
  return [
    '',
    `  Cairn is up: ${plan.services.length} service processes${plan.replicas > 1 ? ` (${plan.replicas} replicas of each)` : ''} (${options.fromSource ? 'sources through tsx' : 'dist bundles'}), logs above and below.`,
    '',
    `  Gateway (REST)  ${gateway}`,
    ...(replicas.length ? [`                  ${replicas.join(', ')} (the other gateway replicas)`] : []),
    `  Database        ${redacted}`,
    `  Data key        ${dataKeySource}`,
    ...(plan.chain ? [`  Chain (anchor)  ${plan.chain.url} (hardhat, chain id 31337; restarts empty)`] : []),
    '',
    `    ${'service'.padEnd(width)}  ${'gRPC'.padEnd(17)}  ops: /metrics, /readyz, /healthz`,
    ...rows,
    '',
    '  Get an API key:',
    '    an enterprise tenant (its admin key is printed once):',
    `      ${cliEnvPrefix(config, defaults, plan.publicBaseUrl)}pnpm cairn admin bootstrap --name ACME`,
    '    or onboard yourself on the free plan (the answer holds your api_key):',
    `      ${onboard}`,
    '    then:',
    `      curl -H "Authorization: Bearer <api_key>" ${plan.publicBaseUrl}/v1/recipes`,
    '',
    '  Ctrl-C stops the fleet.',
    '',
  ].join('\n');
}
