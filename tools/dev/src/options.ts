import { parseArgs } from 'node:util';
import { DEFAULT_GATEWAY_HTTP_PORT, DEFAULT_PORTS } from '@cairn/config';

/** Every shifted port must stay a port. */
const MAX_OFFSET =
  65535 - Math.max(DEFAULT_GATEWAY_HTTP_PORT, ...Object.values(DEFAULT_PORTS).flatMap((p) => [p.grpc, p.ops]));

export interface FleetOptions {
  help: boolean;
  portOffset: number;
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
  return {
    help: values.help === true,
    portOffset: integer('--port-offset', values['port-offset'], 0, 0, MAX_OFFSET),
    provision: values['no-provision'] !== true,
    fromSource: values['from-source'] === true,
    images: imageTag(values.images, values['from-source'] === true),
    rawLogs: values['raw-logs'] === true,
    readyTimeoutMs: integer('--ready-timeout', values['ready-timeout'], 60, 1, 3600) * 1000,
  };
}
