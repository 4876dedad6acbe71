import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { REPO_ROOT, waitFor } from '@cairn/testing';
import { runChild, type Run } from './support/child.js';
import { photoJpeg } from './support/photos.js';
import { onboard, startStack, type Stack, stopAndRemove } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// The binary `npx cairn` / `pnpm exec cairn` runs: the SDK package's bin, linked by pnpm install.
const CAIRN = join(REPO_ROOT, 'node_modules', '.bin', 'cairn');
const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let dir: string;
let signedPath: string;
let strippedPath: string;
let plainPath: string;
let signed: { asset_id: string; asset_url: string; manifest_uri: string } | undefined;

/** Runs the binary with a private config directory; `env` adds to (or, as undefined, removes from) it. */
function cairn(
  args: string[],
  options: { env?: Record<string, string | undefined>; input?: string } = {},
): Promise<Run> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, 'config'),
    CAIRN_BASE_URL: stack.baseUrl,
    ...options.env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return runChild(CAIRN, args, { cwd: dir, env, ...(options.input === undefined ? {} : { input: options.input }) });
}

const withKey = { env: { CAIRN_API_KEY: '' } };

/** A file signed through `cairn sign --json`, its download and a re-encoded copy; made once, by whichever test needs it first. */
async function signedFixture(): Promise<{ asset_id: string; asset_url: string; manifest_uri: string }> {
  if (signed) return signed;
  const json = await cairn(['sign', 'astronaut.jpg', '--recipe', 'image-genai-v1', '--json'], withKey);
  expect(json.code).toBe(0);
  const [result] = JSON.parse(json.stdout) as Array<{ asset_id: string; asset_url: string; manifest_uri: string }>;
  const bytes = Buffer.from(
    await (await fetch(result!.asset_url, { headers: { authorization: `Bearer ${tenant.api_key}` } })).arrayBuffer(),
  );
  signedPath = join(dir, 'signed.jpg');
  await writeFile(signedPath, bytes);
  strippedPath = join(dir, 'stripped.jpg');
  await writeFile(strippedPath, await sharp(bytes).jpeg({ quality: 90 }).toBuffer());
  signed = result!;
  return signed;
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway', 'audit', 'webhook']);
  tenant = await onboard(stack);
  withKey.env.CAIRN_API_KEY = tenant.api_key;
  dir = await mkdtemp(join(tmpdir(), 'cairn-cli-'));
  const photo = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
    .resize(512, 512)
    .jpeg({ quality: 85 })
    .toBuffer();
  await writeFile(join(dir, 'astronaut.jpg'), photo);
  await writeFile(join(dir, 'chelsea.jpg'), await photoJpeg('chelsea', 85));
  plainPath = join(dir, 'coffee.jpg');
  await writeFile(plainPath, await photoJpeg('coffee'));
}, 120_000);
afterAll(() => stopAndRemove(stack, dir));

describe('the cairn command line, run as a child process against the fleet', () => {
  it('login checks the key, stores it 0600 in the config directory, and later commands use it', async () => {
    const bad = await cairn(['login'], { input: 'ck_live_not_a_key\n' });
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain('cairn.auth.invalid_key');
    await expect(stat(join(dir, 'config', 'cairn', 'config.json'))).rejects.toThrow();

    const good = await cairn(['login', '--tenant', tenant.tenant_id], { input: `${tenant.api_key}\n` });
    expect(good.code).toBe(0);
    const path = join(dir, 'config', 'cairn', 'config.json');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({
      api_key: tenant.api_key,
      base_url: stack.baseUrl,
      tenant_id: tenant.tenant_id,
    });
    const usage = await cairn(['usage', '--json']);
    expect(usage.code).toBe(0);
    expect(JSON.parse(usage.stdout)).toHaveProperty('meters.image_sign');
    const keys = await cairn(['keys', '--json']);
    expect(keys.code).toBe(0);
    expect((JSON.parse(keys.stdout) as Array<{ scope: string }>).map((k) => k.scope)).toContain('admin');
  });

  it('login on a terminal asks for the key without echoing it', async () => {
    // A real pseudo-terminal (util-linux `script`), so the CLI sees a TTY as a person's shell gives it.
    const config = join(dir, 'tty-config');
    const child = spawn('script', ['-qec', `${CAIRN} login`, '/dev/null'], {
      env: { PATH: process.env.PATH, HOME: dir, XDG_CONFIG_HOME: config, CAIRN_BASE_URL: stack.baseUrl, TERM: 'dumb' },
      cwd: dir,
    });
    let screen = '';
    child.stdout.on('data', (c: Buffer) => (screen += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // The key is typed only once the prompt is up, as a person would: typed earlier, the terminal itself echoes it.
    await waitFor('the prompt', () => screen.includes(`API key for ${stack.baseUrl}: `));
    child.stdin.write(`${tenant.api_key}\r`);
    expect(await exited).toBe(0);
    expect(screen).toContain('Logged in to');
    expect(screen).not.toContain(tenant.api_key);
    expect(JSON.parse(await readFile(join(config, 'cairn', 'config.json'), 'utf8'))).toMatchObject({
      api_key: tenant.api_key,
    });
  }, 60_000);

  it('sign: progress on stderr, a summary table; a missing file is reported and the exit code says so', async () => {
    const run = await cairn(
      [
        'sign',
        'astronaut.jpg',
        'chelsea.jpg',
        'missing.jpg',
        '--recipe',
        'image-genai-v1',
        '--metadata',
        '{"generator":"CLI","model":"m1"}',
      ],
      withKey,
    );
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/\[1\/3\] astronaut\.jpg: uploading [\d.]+ (B|KiB)…/);
    // Not a terminal: the bar is printed by quarters rather than redrawn, and reaches 100 %.
    expect(run.stderr).toMatch(/\[1\/3\] astronaut\.jpg \[#{24}\] 100% [\d.]+ KiB \/ [\d.]+ KiB/);
    expect(run.stderr).toMatch(/\[2\/3\] chelsea\.jpg: signed a_/);
    expect(run.stderr).toContain('[3/3] missing.jpg: no such file');
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^FILE\s+RESULT\s+ASSET\s+VERIFY PAGE$/);
    expect(lines.filter((l) => /\ssigned\s+a_\w+\s+http/.test(l))).toHaveLength(2);

    const fixture = await signedFixture();
    expect(fixture.asset_id).toMatch(/^a_/);
  }, 120_000);

  it('verify: plain words and what is (not) proven; exit 0 verified, 1 not verified, 2 bad usage, 4 unreachable', async () => {
    const signed = await signedFixture();
    const file = await cairn(['verify', signedPath], {
      env: { CAIRN_API_KEY: undefined, XDG_CONFIG_HOME: join(dir, 'nobody') },
    });
    expect(file.code).toBe(0);
    expect(file.stdout).toContain('✔ Verified (verified_manifest_and_watermark_match)');
    expect(file.stdout).toContain('What this does not prove:');
    expect(file.stdout).toContain('AI-generated:  yes');
    // Not a terminal: no colour codes in what a script reads.
    expect(file.stdout).not.toContain('\u001b[');

    const stripped = await cairn(['verify', strippedPath]);
    expect(stripped.code).toBe(1);
    expect(stripped.stdout).toContain('(watermark_only)');
    expect(stripped.stdout).toContain(`/v/${signed.asset_id}`);
    const plain = await cairn(['verify', plainPath, '--json']);
    expect(plain.code).toBe(1);
    expect(JSON.parse(plain.stdout)).toMatchObject({ status: 'no_provenance' });

    expect((await cairn(['verify', signed.asset_id], withKey)).code).toBe(0);
    const byManifest = await cairn(['verify', signed.manifest_uri, '--json']);
    expect(byManifest.code).toBe(0);
    expect(JSON.parse(byManifest.stdout)).toHaveProperty('manifest_id');

    expect((await cairn(['verify', 'not-a-thing'])).code).toBe(2);
    expect((await cairn(['verify', '--no-such-flag', signedPath])).code).toBe(2);
    const down = await cairn(['verify', signedPath], { env: { CAIRN_BASE_URL: 'http://127.0.0.1:1' } });
    expect(down.code).toBe(4);
    expect(down.stderr).toContain('unreachable');
  }, 120_000);

  it('lookup, webhooks and keys, each with --json', async () => {
    const signed = await signedFixture();
    const lookup = await cairn(['lookup', strippedPath, '--json'], withKey);
    expect(lookup.code).toBe(0);
    expect(
      (JSON.parse(lookup.stdout) as { matches: Array<{ asset_id: string }> }).matches.map((m) => m.asset_id),
    ).toContain(signed.asset_id);

    const created = await cairn(
      ['webhooks', 'create', '--url', 'http://127.0.0.1:9/hook', '--event', 'job.completed', '--json'],
      withKey,
    );
    expect(created.code).toBe(0);
    const hook = JSON.parse(created.stdout) as { webhook_id: string; secret: string };
    expect(hook.secret).toMatch(/^whsec_/);
    expect((await cairn(['webhooks'], withKey)).stdout).toContain(hook.webhook_id);
    expect((await cairn(['webhooks', 'delete', hook.webhook_id], withKey)).code).toBe(0);
    const gone = await cairn(['webhooks', 'delete', hook.webhook_id, '--json'], withKey);
    expect(gone.code).toBe(3);
    expect(JSON.parse(gone.stdout)).toMatchObject({ error: { code: 'cairn.not_found', status: 404 } });

    const key = await cairn(['keys', 'create', '--scope', 'read', '--tenant', tenant.tenant_id, '--json'], withKey);
    const made = JSON.parse(key.stdout) as { key_id: string; api_key: string };
    expect(made.api_key).toBeTruthy();
    expect((await cairn(['keys', 'revoke', made.key_id, '--tenant', tenant.tenant_id], withKey)).stdout).toContain(
      `Revoked ${made.key_id}`,
    );
  }, 60_000);

  it('audit prints the log, and --follow prints new entries as they are recorded', async () => {
    const once = await cairn(['audit', '--json', '--limit', '5'], withKey);
    expect(once.code).toBe(0);
    const entries = once.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seq: number; event_type: string });
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.length).toBeLessThanOrEqual(5);

    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: dir,
      XDG_CONFIG_HOME: join(dir, 'nobody'),
      CAIRN_BASE_URL: stack.baseUrl,
      CAIRN_API_KEY: tenant.api_key,
    };
    const child: ChildProcessWithoutNullStreams = spawn(
      CAIRN,
      ['audit', '--follow', '--json', '--limit', '1', '--interval', '200'],
      { env },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    try {
      await waitFor('the first audit line', () => out.includes('\n'));
      const before = out.trim().split('\n').length;
      // A new event for this tenant: a key created through the API.
      const res = await stack.request(`/v1/tenants/${tenant.tenant_id}/keys`, {
        method: 'POST',
        key: tenant.api_key,
        json: { scope: 'read', description: 'follow' },
      });
      expect(res.status).toBe(201);
      const { key_id } = (await res.json()) as { key_id: string };
      await waitFor('the new entry on --follow', () => out.includes(key_id));
      const lines = out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { event_type: string; data: { key_id?: string } });
      expect(lines.length).toBeGreaterThan(before);
      expect(lines.find((l) => l.data.key_id === key_id)?.event_type).toBe('key.created');
    } finally {
      child.kill('SIGTERM');
    }
  }, 60_000);
});
