/**
 * The service images as an operator runs them: the fleet started from cairn-<svc>:<tag> (tools/dev/images.sh builds
 * them; `npm test` does so before a run that includes this file) by the local launcher's `--images` mode, each
 * service a `docker run --network=host` container against this machine's Postgres, Redis and NATS, in an isolated
 * sandbox and at a free port offset. One photo is signed and verified through the containerized gateway. The images
 * themselves are checked too: the lockfile's versions, no workspace sources or tests, the unprivileged user, and
 * every production dependency (native addons, ffmpeg) loading on the image's Node.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import {
  DEFAULT_GATEWAY_HTTP_PORT,
  DEFAULT_PORTS,
  SERVICE_NAMES,
  SERVICE_NODE_FLAGS,
  type ServiceName,
} from '@cairn/config';
import { createSandbox, PG_ADMIN_URL, type Sandbox } from '@cairn/testing';
import { dockerEnv, imageName, missingImages, removeContainers } from '../tools/dev/src/images.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';
import { recording } from './support/audio.js';
import { Launcher } from './support/fleet-launcher.js';
import { portFree } from './support/ports.js';
import { multipart } from './support/stack.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TAG = process.env.CAIRN_IMAGE_TAG ?? 'dev';
const PHOTOS = `${SHARED_DIR}/fixtures/photos`;

/** An offset between 5000 and 9000 (fleet-process.test.ts takes 1000-5000) with every fleet port free now. */
async function freeOffset(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const offset = 5000 + Math.floor(Math.random() * 4001);
    const ports = [
      DEFAULT_GATEWAY_HTTP_PORT + offset,
      8545 + offset, // the local chain
      9471 + offset, // the signer's OCSP responder
      ...SERVICE_NAMES.flatMap((n) => [DEFAULT_PORTS[n].grpc + offset, DEFAULT_PORTS[n].ops + offset]),
    ];
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return offset;
  }
  throw new Error('no port offset between 5000 and 9000 has all the fleet ports free');
}

function docker(args: string[], timeoutMs = 60_000): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync('docker', args, { env: dockerEnv(process.env), encoding: 'utf8', timeout: timeoutMs });
  return { status: run.status, stdout: run.stdout ?? '', stderr: run.stderr ?? '' };
}

/** The version pnpm-lock.yaml pins for each production dependency of services/<svc> (peer suffixes dropped). */
function lockedVersions(service: ServiceName): Record<string, string> {
  const lines = readFileSync(`${ROOT}pnpm-lock.yaml`, 'utf8').split('\n');
  const start = lines.indexOf(`  services/${service}:`);
  if (start < 0) throw new Error(`pnpm-lock.yaml has no importer services/${service}`);
  const versions: Record<string, string> = {};
  let section = '';
  let dependency = '';
  for (const line of lines.slice(start + 1)) {
    if (/^ {0,2}\S/.test(line)) break; // the next importer or section
    const field = /^ {4}(\w+):$/.exec(line);
    if (field) section = field[1]!;
    const name = /^ {6}'?([^':]+)'?:$/.exec(line);
    if (name) dependency = name[1]!;
    const version = /^ {8}version: (\S+)$/.exec(line);
    if (version && section === 'dependencies') versions[dependency] = version[1]!.replace(/\(.*$/, '');
  }
  return versions;
}

/**
 * Run inside each image (as its own user, no network): who it runs as, what /app holds, the installed version of
 * each dependency of package.json, which of them fail to load on the image's Node, and ffmpeg's answer.
 */
const INSPECT = `
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire('/app/package.json');
// reflect-metadata first, as the services' entry points load it (@peculiar/x509 needs it on import).
const deps = Object.keys(JSON.parse(readFileSync('/app/package.json', 'utf8')).dependencies ?? {})
  .sort((a, b) => (b === 'reflect-metadata') - (a === 'reflect-metadata'));
const versions = {};
const failed = {};
for (const dep of deps) {
  versions[dep] = JSON.parse(readFileSync('/app/node_modules/' + dep + '/package.json', 'utf8')).version;
  try { await import(require.resolve(dep)); } catch (error) { failed[dep] = String(error?.message ?? error).slice(0, 200); }
}
const workspace = [];
const walk = (dir, depth) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = dir + '/' + entry.name;
    if (entry.name.startsWith('@cairn') || entry.name.includes('file+')) workspace.push(path);
    if (entry.isDirectory() && !entry.isSymbolicLink() && depth > 0) walk(path, depth - 1);
  }
};
walk('/app/node_modules', 3);
let ffmpeg = null;
if (deps.includes('@ffmpeg-installer/ffmpeg'))
  ffmpeg = execFileSync(require('@ffmpeg-installer/ffmpeg').path, ['-hide_banner', '-version']).toString().split('\\n')[0];
process.stdout.write(JSON.stringify({
  uid: process.getuid(), node: process.version, app: readdirSync('/app').sort(), workspace,
  versions, failed, ffmpeg, writable: (() => { try { require('fs').writeFileSync('/app/x', ''); return true; } catch { return false; } })(),
  sourcesOrTests: ['src', 'test'].filter((d) => existsSync('/app/' + d)),
}));
process.exit(0);
`;

const DEPLOYED = ['README.md', 'dist', 'node_modules', 'ops-port', 'package.json', 'pnpm-lock.yaml'];

interface Inspection {
  uid: number;
  node: string;
  app: string[];
  workspace: string[];
  versions: Record<string, string>;
  failed: Record<string, string>;
  ffmpeg: string | null;
  writable: boolean;
  sourcesOrTests: string[];
}

let sandbox: Sandbox | undefined;
let offset: number;
let launcher: Launcher | undefined;
const containers = () => SERVICE_NAMES.map((name) => `cairn-${name}-${launcher?.child.pid ?? 0}`);
const gateway = () => `http://127.0.0.1:${DEFAULT_GATEWAY_HTTP_PORT + offset}`;

beforeAll(async () => {
  const missing = missingImages(SERVICE_NAMES, TAG, process.env);
  if (missing.length)
    throw new Error(
      `the service images are missing (${missing.join(', ')}), or no docker engine answers: build them with ` +
        `\`bash tools/dev/images.sh\` (it installs and starts the engine too; npm test runs it before this file)`,
    );
  sandbox = await createSandbox();
  offset = await freeOffset();
  const env: NodeJS.ProcessEnv = { ...process.env, ...sandbox.env, LOG_LEVEL: 'info', PG_ADMIN_URL };
  for (const name of ['GRPC_PORT', 'OPS_PORT', 'HTTP_PORT', 'NODE_OPTIONS', 'OCSP_PORT', 'OCSP_PUBLIC_URL'])
    delete env[name];
  launcher = Launcher.spawn(['--images', TAG, '--port-offset', String(offset), '--ready-timeout', '150'], env);
  await launcher.untilReady(170);
}, 200_000);

afterAll(async () => {
  await launcher?.stop(30_000);
  // Whatever happened above, no container of this run stays behind.
  if (launcher?.child.pid) removeContainers(containers(), process.env);
  await sandbox?.dispose();
}, 90_000);

describe('the service images (Dockerfile, tools/dev/images.sh)', () => {
  const lockfile = Object.fromEntries(SERVICE_NAMES.map((name) => [name, lockedVersions(name)])) as Record<
    ServiceName,
    Record<string, string>
  >;

  it.each(SERVICE_NAMES.map((n) => [n]))(
    'cairn-%s holds its dist and the lockfile’s production dependencies, no workspace sources, runs as node',
    (name) => {
      const config = docker(['image', 'inspect', '-f', '{{.Config.User}} {{json .Config.Cmd}}', imageName(name, TAG)]);
      // The service processes' V8 flags (SERVICE_NODE_FLAGS), as `npm run up` passes them.
      expect(config.stdout.trim()).toBe(`node ${JSON.stringify(['node', ...SERVICE_NODE_FLAGS, 'dist/main.js'])}`);
      const run = docker(
        ['run', '--rm', '--network=none', imageName(name, TAG), 'node', '--input-type=module', '-e', INSPECT],
        120_000,
      );
      expect({ status: run.status, stderr: run.status === 0 ? '' : run.stderr }).toEqual({ status: 0, stderr: '' });
      const seen = JSON.parse(run.stdout) as Inspection;
      expect(seen.uid).toBe(1000);
      expect(seen.node).toMatch(/^v24\./);
      expect(seen.writable).toBe(false);
      expect(seen.sourcesOrTests).toEqual([]);
      // The deploy's folder and nothing else: its dist/, production node_modules, package.json and lockfile.
      expect(seen.app).toEqual(expect.arrayContaining(['dist', 'node_modules', 'ops-port', 'package.json']));
      expect(seen.app.filter((entry) => !DEPLOYED.includes(entry))).toEqual([]);
      expect(seen.workspace).toEqual([]);
      // Exactly the lockfile's versions, for every production dependency the service declares.
      expect(seen.versions).toEqual(lockfile[name]);
      expect(seen.failed).toEqual({});
      if (seen.versions['@ffmpeg-installer/ffmpeg']) expect(seen.ffmpeg).toMatch(/^ffmpeg version /);
    },
    150_000,
  );

  it('the signer image carries the lockfile’s @aws-sdk/client-s3 (the version a re-resolving deploy got wrong)', () => {
    const run = docker([
      'run',
      '--rm',
      '--network=none',
      imageName('signer', TAG),
      'node',
      '-p',
      "require('/app/node_modules/@aws-sdk/client-s3/package.json').version",
    ]);
    expect(run.stdout.trim()).toBe(lockfile.signer['@aws-sdk/client-s3']);
  });
});

describe('the fleet started from the images', () => {
  it.each(SERVICE_NAMES.map((n) => [n]))('runs %s as a container of its image, ready on its ops port', async (name) => {
    const container = `cairn-${name}-${launcher?.child.pid ?? 0}`;
    const state = docker([
      'inspect',
      '-f',
      '{{.Config.Image}} {{.State.Running}} {{.HostConfig.NetworkMode}}',
      container,
    ]);
    expect(state.stdout.trim()).toBe(`${imageName(name, TAG)} true host`);
    const res = await fetch(`http://127.0.0.1:${DEFAULT_PORTS[name].ops + offset}/readyz`);
    expect(res.status).toBe(200);
  });

  /** A tenant of the containerized fleet, onboarded through its gateway. */
  async function apiKey(): Promise<string> {
    const onboard = await fetch(`${gateway()}/v1/onboard`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        email: 'images@example.com',
        tenant_name: 'Images',
        plan: 'developer',
        payment_method_id: 'pm_card_visa',
      }),
    });
    expect(onboard.status).toBe(201);
    return ((await onboard.json()) as { api_key: string }).api_key;
  }

  /** POST /v1/sign, download the signed content, POST it to /v1/verify: the verdict. */
  async function signAndVerify(
    key: string,
    recipe: string,
    upload: { bytes: Buffer; name: string },
  ): Promise<{ status: string; signals: Record<string, unknown> }> {
    const sign = await fetch(`${gateway()}/v1/sign`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'idempotency-key': randomUUID() },
      body: multipart(
        { recipe, metadata: JSON.stringify({ generator: 'Gen' }) },
        { field: 'asset', bytes: upload.bytes, name: upload.name },
      ),
    });
    const signText = await sign.text();
    expect({ status: sign.status, body: sign.status === 200 ? '' : signText }).toEqual({ status: 200, body: '' });
    const signed = JSON.parse(signText) as { asset_id: string };
    const content = await fetch(`${gateway()}/v1/assets/${signed.asset_id}/content`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(content.status).toBe(200);
    const verify = await fetch(`${gateway()}/v1/verify`, {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: Buffer.from(await content.arrayBuffer()), name: upload.name }),
    });
    expect(verify.status).toBe(200);
    return (await verify.json()) as { status: string; signals: Record<string, unknown> };
  }

  it('signs a photo through the containerized gateway and verifies it: verified_manifest_and_watermark_match', async () => {
    const photo = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
      .jpeg({ quality: 90 })
      .toBuffer();
    const result = await signAndVerify(await apiKey(), 'image-genai-v1', { bytes: photo, name: 'photo.jpg' });
    expect(result.status).toBe('verified_manifest_and_watermark_match');
    expect(result.signals).toMatchObject({ c2pa_signature_valid: true, watermark_present: true });
  }, 120_000);

  it('signs and verifies a WAV too: the images carry the ffmpeg the audio watermark decodes with', async () => {
    const wav = await recording('speech', 8, 2);
    const result = await signAndVerify(await apiKey(), 'audio-genai-v1', { bytes: wav, name: 'voice.wav' });
    expect(result.status).toBe('verified_manifest_and_watermark_match');
    expect(result.signals).toMatchObject({ c2pa_signature_valid: true, watermark_present: true });
  }, 120_000);

  it('drains every container on SIGINT: the launcher exits 0 and no container is left', async () => {
    const ended = await launcher!.interrupt(45_000);
    const output = launcher!.output();
    expect({ ...ended, output: ended.code === 0 ? '' : output }).toEqual({ code: 0, signal: null, output: '' });
    expect(output).toContain('all services stopped cleanly');
    const left = docker(['ps', '-a', '--format', '{{.Names}}']).stdout.split('\n');
    expect(left.filter((n) => containers().includes(n))).toEqual([]);
  }, 60_000);
});
