import { parseArgs } from 'node:util';
import { DEFAULT_GATEWAY_HTTP_PORT, DEFAULT_PORTS } from '@cairn/config';
import { DEFAULT_OCSP_PORT, REPLICA_PORT_STRIDE } from './plan.js';

/** The highest port of a fleet before any shift (the signer's OCSP responder, 9471). */
const HIGHEST_PORT = Math.max(
  DEFAULT_GATEWAY_HTTP_PORT,
  DEFAULT_OCSP_PORT,
  ...Object.values(DEFAULT_PORTS).flatMap((p) => [p.grpc, p.ops]),
);

/** Every shifted port must stay a port. */
const MAX_OFFSET = 65535 - HIGHEST_PORT;

export const MAX_REPLICAS = 10;

export interface FleetOptions {
  help: boolean;
  portOffset: number;
  /** Processes per service (--replicas). */
  replicas: number;
  provision: boolean;
  fromSource: boolean;
  /** Run the services from the images cairn-<svc>:<tag> (docker, host network) instead of the bundles. */
  images: string | undefined;
  rawLogs: boolean;
  readyTimeoutMs: number;
}

export class UsageError extends Error {}

export const USAGE = `Usage: node --import tsx tools/dev/src/fleet.ts [options]   (npm run up does the install and build first)

Runs the nine Cairn services locally against Postgres, Redis and NATS JetStream on this machine, with their
logs interleaved, until Ctrl-C.

Options:
  --port-offset <n>     shift every port by n (gateway HTTP 8080+n, gRPC 9450+n.., ops 9460+n..), to run a
                        second fleet next to the first (default 0)
  --replicas <n>        run every service as n processes (default 1, at most 10). Replica r listens on its
                        ports + r × 1000 (signer gRPC 9451, 10451, ...; gateway HTTP 8080, 9080, ...), and every
                        <SVC>_GRPC_ADDR lists all of them (ipv4:127.0.0.1:9451,127.0.0.1:10451): callers spread
                        their calls over the replicas, as in a cluster. PUBLIC_BASE_URL and the OCSP URL written
                        into certificates stay the first replica's; the local chain stays one. A second fleet
                        beside this one needs --port-offset past (n - 1) × 1000 plus its own span.
  --no-provision        do not create the database role and database (use when you give DATABASE_URL)
  --from-source         run services/<svc>/src/main.ts through tsx instead of the built dist/main.js
  --images <tag>        run each service from its image cairn-<svc>:<tag> (bash tools/dev/images.sh builds
                        them as :dev) as a docker container on the host network
  --raw-logs            print the services' JSON log lines as they are
  --ready-timeout <s>   how long the services have to become ready (default 60)
  -h, --help            this text

Environment (all optional):
  DATABASE_URL          the services' database (default postgres://cairn@127.0.0.1:5432/cairn); its user and
                        database are created when missing unless --no-provision
  PG_ADMIN_URL          superuser connection used to provision (default postgres://postgres@127.0.0.1:5432/postgres)
  REDIS_URL, NATS_URL   as the services read them (defaults redis://127.0.0.1:6379, nats://127.0.0.1:4222)
  CAIRN_DATA_KEY        the gateway's data key; by default one is created once in .cairn/data-key
  Anything else the services read (LOG_LEVEL, NATS_STREAM, ...) is passed through to them.
`;

function integer(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new UsageError(`${name} must be a whole number (got "${raw}")`);
  const value = Number(raw);
  if (value < min || value > max) throw new UsageError(`${name} must be between ${min} and ${max} (got ${value})`);
  return value;
}

function imageTag(raw: string | undefined, fromSource: boolean): string | undefined {
  if (raw === undefined) return undefined;
  if (fromSource) throw new UsageError('--images and --from-source exclude each other');
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(raw)) throw new UsageError(`--images: not an image tag: "${raw}"`);
  return raw;
}

export function parseOptions(argv: string[]): FleetOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: 'boolean', short: 'h', default: false },
        'port-offset': { type: 'string' },
        replicas: { type: 'string' },
        'no-provision': { type: 'boolean', default: false },
        'from-source': { type: 'boolean', default: false },
        images: { type: 'string' },
        'raw-logs': { type: 'boolean', default: false },
        'ready-timeout': { type: 'string' },
      },
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const portOffset = integer('--port-offset', values['port-offset'], 0, 0, MAX_OFFSET);
  const replicas = integer('--replicas', values.replicas, 1, 1, MAX_REPLICAS);
  const highest = HIGHEST_PORT + portOffset + (replicas - 1) * REPLICA_PORT_STRIDE;
  if (highest > 65535)
    throw new UsageError(
      `--replicas ${replicas} with --port-offset ${portOffset} puts the last replica's ports past 65535 (up to ${highest})`,
    );
  return {
    help: values.help === true,
    portOffset,
    replicas,
    provision: values['no-provision'] !== true,
    fromSource: values['from-source'] === true,
    images: imageTag(values.images, values['from-source'] === true),
    rawLogs: values['raw-logs'] === true,
    readyTimeoutMs: integer('--ready-timeout', values['ready-timeout'], 60, 1, 3600) * 1000,
  };
}
