/**
 * The local fleet: checks Postgres, Redis and NATS, provisions the database, starts the nine services with
 * their logs interleaved, waits until every one is ready, and on Ctrl-C drains them all.
 *
 *   node --import tsx tools/dev/src/fleet.ts [--port-offset N] [--no-provision] [--from-source | --images TAG] [--raw-logs]
 */
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  commonEnvShape,
  ConfigError,
  loadConfig,
  SERVICE_NAMES,
  SERVICE_NODE_FLAGS,
  type CommonEnv,
} from '@cairn/config';
import { banner } from './banner.js';
import { describeExit, firstExit, ServiceProcess, stopAll, type ChildExit, type OutputOptions } from './children.js';
import { startLocalChain, type LocalChain } from './chain.js';
import { makeDevPki, type TlsFiles } from '@cairn/testing';
import { checkInfrastructure, describeProblems, provisionDatabase } from './infra.js';
import { imageCommand, missingImages, removeContainers } from './images.js';
import { parseOptions, UsageError, USAGE, type FleetOptions } from './options.js';
import {
  allPorts,
  busyPorts,
  localDataKey,
  planFleet,
  reachableHost,
  REPLICA_PORT_STRIDE,
  type FleetPlan,
} from './plan.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
const SHUTDOWN_GRACE_MS = 15_000;
const POLL_MS = 400;

/** Every service process started, so that even a launcher bug does not leave them running. */
let spawned: ServiceProcess[] = [];

const color = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
/** The log prefix's width: service names, with room for a replica's suffix (`signer-1`) when there are replicas. */
let width = Math.max('fleet'.length, ...SERVICE_NAMES.map((n) => n.length));

/** The launcher's own status lines, aligned with the services' prefixed output. */
function say(line: string): void {
  process.stdout.write(`${'fleet'.padEnd(width)} │ ${line}\n`);
}

function complain(line: string): void {
  process.stderr.write(`${'fleet'.padEnd(width)} │ ${line}\n`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause;
    const code = cause && typeof cause === 'object' && 'code' in cause ? String(cause.code) : undefined;
    return code ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}

type Readiness = { ok: true } | { ok: false; detail: string };

async function probeReady(url: string): Promise<Readiness> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    const body = (await res.text()).slice(0, 300);
    return res.status === 200 ? { ok: true } : { ok: false, detail: `HTTP ${res.status} ${body}` };
  } catch (error) {
    const text = errorText(error);
    return { ok: false, detail: text.includes('ECONNREFUSED') ? 'not listening yet (ECONNREFUSED)' : text };
  }
}

type StartOutcome =
  | { kind: 'ready' }
  | { kind: 'exited'; process: ServiceProcess }
  | { kind: 'timeout'; waiting: Map<string, string> }
  | { kind: 'signal' };

/** Polls every /readyz until all answer 200, a service exits, the deadline passes or the user interrupts. */
async function waitUntilReady(
  plan: FleetPlan,
  processes: ServiceProcess[],
  timeoutMs: number,
  interrupted: () => boolean,
  stop: Promise<unknown>,
): Promise<StartOutcome> {
  const deadline = Date.now() + timeoutMs;
  const waiting = new Map<string, string>(plan.services.map((s) => [s.label, 'not started']));
  const anyExit = firstExit(processes);
  for (;;) {
    if (interrupted()) return { kind: 'signal' };
    const exited = processes.find((p) => !p.running);
    if (exited) return { kind: 'exited', process: exited };
    await Promise.all(
      plan.services
        .filter((s) => waiting.has(s.label))
        .map(async (s) => {
          const result = await probeReady(`http://${plan.host}:${s.opsPort}/readyz`);
          if (result.ok) waiting.delete(s.label);
          else waiting.set(s.label, result.detail);
        }),
    );
    if (waiting.size === 0) return { kind: 'ready' };
    if (Date.now() >= deadline) return { kind: 'timeout', waiting };
    await Promise.race([sleep(POLL_MS), anyExit, stop]);
  }
}

function printTail(p: ServiceProcess): void {
  const lines = p.tail.get();
  if (!lines.length) {
    complain(`${p.name} wrote nothing.`);
    return;
  }
  complain(`last lines of ${p.name}:`);
  for (const line of lines) process.stderr.write(`    ${line}\n`);
}

async function main(argv: string[]): Promise<number> {
  let options: FleetOptions;
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`fleet: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }

  // The services' own settings with their defaults: the launcher checks and prints what they will use.
  let config: CommonEnv;
  try {
    config = loadConfig(commonEnvShape, process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      complain(error.message);
      return 1;
    }
    throw error;
  }
  const adminUrl = process.env.PG_ADMIN_URL ?? DEFAULT_ADMIN_URL;

  // (a) Postgres, Redis and NATS: every missing one named at once, with the command that starts it.
  const problems = await checkInfrastructure({
    postgresUrl: options.provision ? adminUrl : config.DATABASE_URL,
    redisUrl: config.REDIS_URL,
    natsUrl: config.NATS_URL,
  });
  if (problems.length) {
    process.stderr.write(describeProblems(problems));
    return 1;
  }

  // (b) The app role and its database.
  if (options.provision) {
    try {
      const { role, database, created } = await provisionDatabase(adminUrl, config.DATABASE_URL);
      say(
        created ? `created database ${database} owned by role ${role}` : `database ${database} (role ${role}) is there`,
      );
      say('each service connects as its own role (cairn_<service>), owning only its schema');
    } catch (error) {
      complain(
        `cannot provision the database with ${adminUrl.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@')}: ${errorText(error)}`,
      );
      complain('set PG_ADMIN_URL to a superuser connection, or create it yourself and pass --no-provision.');
      return 1;
    }
  }

  // (c) What to run, on which ports, with which environment.
  const commands = new Map(
    SERVICE_NAMES.map((name) => [
      name,
      options.fromSource
        ? [process.execPath, ...SERVICE_NODE_FLAGS, '--import', 'tsx', `services/${name}/src/main.ts`]
        : [process.execPath, ...SERVICE_NODE_FLAGS, `services/${name}/dist/main.js`],
    ]),
  );
  // One container a process (a replica's label, e.g. signer-1), named after this launcher so two fleets never clash.
  const containerName = (label: string) => `cairn-${label}-${process.pid}`;
  const containers = () => plan.services.map((s) => containerName(s.label));
  const imageTag = options.images;
  const absentImages = imageTag === undefined ? [] : missingImages(SERVICE_NAMES, imageTag, process.env);
  if (absentImages.length) {
    complain(`missing images ${absentImages.join(', ')} (or no docker engine answers)`);
    complain('build them first: bash tools/dev/images.sh (tags cairn-<svc>:dev; CAIRN_IMAGE_TAG=<tag> for another)');
    return 1;
  }
  const missing = SERVICE_NAMES.filter(
    (name) =>
      imageTag === undefined &&
      !existsSync(`${ROOT}services/${name}/${options.fromSource ? 'src/main.ts' : 'dist/main.js'}`),
  );
  if (missing.length) {
    complain(
      `missing ${missing.map((n) => `services/${n}/${options.fromSource ? 'src/main.ts' : 'dist/main.js'}`).join(', ')}`,
    );
    if (!options.fromSource)
      complain('build them first: node tools/dev/build.mjs (npm run up does), or run the sources with --from-source');
    return 1;
  }

  let dataKey = process.env.CAIRN_DATA_KEY;
  let dataKeySource = 'CAIRN_DATA_KEY from the environment';
  if (!dataKey) {
    try {
      const local = await localDataKey(ROOT);
      dataKey = local.key;
      dataKeySource = relative(process.cwd(), local.path) || local.path;
      if (local.created) say(`created the gateway's data key in ${dataKeySource}`);
      if (local.warning) complain(local.warning);
    } catch (error) {
      complain(errorText(error));
      return 1;
    }
  }

  // (d) mutual TLS between the services: a development CA and one certificate per service, kept across runs.
  let tls: Record<string, TlsFiles> | undefined;
  if (process.env.GRPC_TLS_CA) {
    say('gRPC TLS files from the environment (GRPC_TLS_CA, GRPC_TLS_CERT, GRPC_TLS_KEY)');
  } else {
    const tlsDir = join(ROOT, '.cairn', 'tls');
    try {
      tls = await makeDevPki(tlsDir, SERVICE_NAMES);
      say(
        `gRPC between the services is mutual TLS (development CA and certificates in ${relative(process.cwd(), tlsDir) || tlsDir})`,
      );
    } catch (error) {
      complain(`gRPC runs without TLS: ${errorText(error)}`);
    }
  }

  const plan = planFleet(process.env, {
    offset: options.portOffset,
    replicas: options.replicas,
    databaseUrl: config.DATABASE_URL,
    dataKey,
    blobStoreUrl: `file://${join(ROOT, '.cairn', 'blobs')}`,
    serviceRoles: options.provision,
    ...(tls ? { tls } : {}),
  });
  const busy = await busyPorts(reachableHost(config.GRPC_HOST), allPorts(plan));
  if (busy.length) {
    complain(`ports already in use: ${busy.map((b) => `${b.port} (${b.what})`).join(', ')}`);
    complain('is another fleet running? Stop it, or run this one beside it with --port-offset <n>.');
    return 1;
  }

  // The anchor service's chain: a hardhat node, unless ANCHOR_RPC_URL points elsewhere.
  let chain: LocalChain | undefined;
  if (plan.chain) {
    try {
      chain = await startLocalChain(ROOT, plan.chain.port);
      say(`local chain (hardhat, chain id 31337) on ${chain.url}`);
    } catch (error) {
      complain(`cannot start the local chain: ${errorText(error)}`);
      complain('or point the anchor service at another node: ANCHOR_RPC_URL=http://…');
      return 1;
    }
  }
  const stopChain = async () => {
    if (!chain) return;
    await chain.stop(5000);
    say('local chain stopped');
  };

  // Signals: the first drains the fleet, a second one kills it.
  let interrupted = false;
  let processes: ServiceProcess[] = [];
  let requestStop: () => void = () => undefined;
  const stopRequested = new Promise<void>((resolve) => {
    requestStop = resolve;
  });
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) {
      complain(`${signal} again: killing the services now`);
      for (const p of processes) p.signal('SIGKILL');
      return;
    }
    interrupted = true;
    say(`${signal}: stopping`);
    requestStop();
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
  // The services run in their own process groups: never leave one behind, whatever ends the launcher.
  process.on('exit', () => {
    for (const p of processes) if (p.running) p.signal('SIGKILL');
    // A killed `docker run` leaves its container running.
    if (imageTag !== undefined) removeContainers(containers(), process.env);
    chain?.kill();
  });

  width = Math.max(width, ...plan.services.map((s) => s.label.length));
  const output: OutputOptions = { color, raw: options.rawLogs, prefixWidth: width };
  say(
    `starting ${SERVICE_NAMES.length} services${options.replicas > 1 ? `, ${options.replicas} replicas each (ports +${REPLICA_PORT_STRIDE} per replica)` : ''}${options.portOffset ? ` (ports +${options.portOffset})` : ''} from ${imageTag !== undefined ? `images cairn-<svc>:${imageTag} (docker, host network)` : options.fromSource ? 'sources (tsx)' : 'dist bundles'}`,
  );
  processes = plan.services.map((s, index) => {
    const run =
      imageTag === undefined
        ? { command: commands.get(s.name) ?? [], env: s.env }
        : imageCommand(s.name, imageTag, containerName(s.label), s.env);
    return new ServiceProcess(s.label, index, run.command, {
      cwd: ROOT,
      env: run.env,
      output,
      stdout: process.stdout,
      stderr: process.stderr,
    });
  });
  spawned = processes;

  const stopFleet = async (reason: string): Promise<ChildExit[]> => {
    say(`stopping the services (${reason})`);
    const exits = await stopAll(processes, SHUTDOWN_GRACE_MS, (name) =>
      complain(`${name} did not stop within ${SHUTDOWN_GRACE_MS / 1000} s: killing it`),
    );
    const unclean = processes.filter((_, i) => exits[i]?.code !== 0);
    if (unclean.length === 0) say('all services stopped cleanly');
    // A service still starting has no signal handler yet: SIGTERM simply ends it.
    const cutShort = unclean.filter((p) => p.exit?.signal === 'SIGTERM');
    if (cutShort.length) complain(`stopped before they were ready: ${cutShort.map((p) => p.name).join(', ')}`);
    for (const p of unclean)
      if (!cutShort.includes(p)) complain(`${p.name} ${describeExit(p.exit ?? { code: null, signal: null })}`);
    if (imageTag !== undefined) removeContainers(containers(), process.env);
    // After the services: the anchor service's last tick may still be talking to it.
    await stopChain();
    return exits;
  };

  // (d) Every /readyz answering 200.
  const started = Date.now();
  const outcome = await waitUntilReady(plan, processes, options.readyTimeoutMs, () => interrupted, stopRequested);
  if (outcome.kind === 'exited') {
    complain(
      `${outcome.process.name} ${describeExit(outcome.process.exit ?? { code: null, signal: null })} before the fleet was ready.`,
    );
    printTail(outcome.process);
    await stopFleet(`${outcome.process.name} failed to start`);
    return 1;
  }
  if (outcome.kind === 'timeout') {
    complain(`not ready after ${options.readyTimeoutMs / 1000} s:`);
    for (const [name, detail] of outcome.waiting) complain(`  ${name}: ${detail}`);
    await stopFleet('start timed out');
    return 1;
  }
  if (outcome.kind === 'signal') {
    const exits = await stopFleet('interrupted while starting');
    return exits.every((e) => e.code === 0) ? 0 : 1;
  }

  // (e) How to use it.
  say(`all ${plan.services.length} service processes ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  process.stdout.write(banner(plan, options, config, dataKeySource, width));
  process.stdout.write('fleet ready\n');

  // (f) Run until interrupted, or until a service dies.
  const ended = await Promise.race([
    firstExit(processes).then((p) => ({ died: p })),
    stopRequested.then(() => ({ died: undefined })),
  ]);
  if (ended.died) {
    complain(`${ended.died.name} ${describeExit(ended.died.exit ?? { code: null, signal: null })} unexpectedly.`);
    printTail(ended.died);
    await stopFleet(`${ended.died.name} died`);
    return 1;
  }
  const exits = await stopFleet('interrupted');
  return exits.every((e) => e.code === 0) ? 0 : 1;
}

// A closed stdout (piped into `head`) must not crash the launcher and orphan the services.
process.stdout.on('error', () => undefined);

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`fleet: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    for (const p of spawned) p.signal('SIGTERM');
    process.exit(1);
  },
);
