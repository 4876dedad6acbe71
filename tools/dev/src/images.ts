/**
 * `--images <tag>`: the fleet from the service images (cairn-<svc>:<tag>, built by tools/dev/images.sh) instead of
 * the bundles, each service one `docker run --network=host` container with the environment the launcher planned.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServiceName } from '@cairn/config';

/** tools/dev/images.sh's private engine, used when DOCKER_HOST names none. */
export const CAIRN_DOCKER_SOCKET = '/var/lib/cairn-docker/docker.sock';

/**
 * The host's own variables, meaningless or harmful inside the image (its PATH and HOME are the image's), and
 * those addressed to the launcher or the docker CLI rather than to a service.
 */
const HOST_ONLY = new Set([
  'PATH',
  'HOME',
  'HOSTNAME',
  'PWD',
  'OLDPWD',
  'SHLVL',
  '_',
  'TERM',
  'USER',
  'LOGNAME',
  'SHELL',
  'MAIL',
  'TMPDIR',
  'LANG',
  'NODE_OPTIONS',
  'NODE_PATH',
  'NODE_EXTRA_CA_CERTS',
  'NODE_ENV',
  'INIT_CWD',
  'PG_ADMIN_URL',
]);
const HOST_ONLY_PREFIXES = ['npm_', 'PNPM_', 'DOCKER_', 'JEST_', 'LC_', 'XDG_', 'SSH_', 'COREPACK_'];

export function imageName(service: ServiceName, tag: string): string {
  return `cairn-${service}:${tag}`;
}

/** The docker CLI's environment: the engine images.sh starts, unless DOCKER_HOST names another. */
export function dockerEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  if (env.DOCKER_HOST || !existsSync(CAIRN_DOCKER_SOCKET)) return env;
  return { ...env, DOCKER_HOST: `unix://${CAIRN_DOCKER_SOCKET}` };
}

/** The names among `services` whose image is not there. */
export function missingImages(services: readonly ServiceName[], tag: string, env: NodeJS.ProcessEnv): string[] {
  return services
    .map((name) => imageName(name, tag))
    .filter(
      (image) =>
        spawnSync('docker', ['image', 'inspect', image], { env: dockerEnv(env), stdio: 'ignore', timeout: 30_000 })
          .status !== 0,
    );
}

export function serviceVariables(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => env[name] !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
    .filter((name) => !HOST_ONLY.has(name) && !HOST_ONLY_PREFIXES.some((p) => name.startsWith(p)))
    .sort();
}

/**
 * The host folders a service's settings name (TLS files, a file:// blob store): mounted at the same path, so the
 * settings stay true inside the container. A blob store folder not made yet is made now (docker would make it
 * root's).
 */
export function hostMounts(env: NodeJS.ProcessEnv, names: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const name of names) {
    const value = env[name] ?? '';
    let path: string | undefined;
    if (value.startsWith('file:///')) path = fileURLToPath(value);
    else if (value.startsWith('/') && !value.includes(':')) path = value;
    if (!path) continue;
    if (!existsSync(path)) {
      if (name !== 'BLOB_STORE_URL') continue;
      mkdirSync(path, { recursive: true });
    }
    dirs.add(statSync(path).isDirectory() ? path : dirname(path));
  }
  const sorted = [...dirs].sort();
  return sorted.filter((dir) => !sorted.some((other) => other !== dir && dir.startsWith(`${other}/`)));
}

/**
 * `docker run` for one service: host network (it listens on 127.0.0.1 like the bundles do), removed when it
 * exits, run as the launcher's user so the mounted files (0600 TLS keys, the blob store) are its own, and given
 * its planned variables by name (their values reach the docker CLI through its environment, not its arguments).
 */
export function imageCommand(
  service: ServiceName,
  tag: string,
  container: string,
  env: NodeJS.ProcessEnv,
): { command: string[]; env: NodeJS.ProcessEnv } {
  // The image binds every interface (GRPC_HOST=0.0.0.0, right in a pod); on the host's network that would be every
  // interface of this machine, so the fleet's loopback default is kept.
  if (!env.GRPC_HOST) env = { ...env, GRPC_HOST: '127.0.0.1' };
  const names = serviceVariables(env);
  const user = typeof process.getuid === 'function' ? [`--user=${process.getuid()}:${process.getgid?.() ?? 0}`] : [];
  const command = [
    'docker',
    'run',
    '--rm',
    '--network=host',
    `--name=${container}`,
    ...user,
    ...hostMounts(env, names).flatMap((dir) => ['--volume', `${dir}:${dir}`]),
    ...names.flatMap((name) => ['--env', name]),
    imageName(service, tag),
  ];
  return { command, env: dockerEnv(env) };
}

/** Removes the containers still there (a SIGKILLed `docker run` leaves its container running). */
export function removeContainers(containers: readonly string[], env: NodeJS.ProcessEnv): void {
  if (containers.length === 0) return;
  spawnSync('docker', ['rm', '--force', ...containers], { env: dockerEnv(env), stdio: 'ignore', timeout: 60_000 });
}
