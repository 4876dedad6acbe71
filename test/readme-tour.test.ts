import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { REPO_ROOT, waitFor } from '@cairn/testing';
import { runChild, type Run } from './support/child.js';
import { multipart, onboard, startStack, type Stack, stopAndRemove } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// The README's five-minute tour, run line by line as a user pastes it, against a sandboxed fleet: when the code
// and the README drift apart, this fails. Only what the sandbox cannot be is substituted: the gateway's address
// (a free port, not 8080), `npx` (the repository's own bin, as `npx cairn` finds it from the repository root) and
// ImageMagick's `convert` (not installed here; a stand-in that re-encodes a JPEG the way the tour asks).
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const README_GATEWAY = 'http://127.0.0.1:8080';
const PHOTOS = `${SHARED_DIR}/fixtures/photos`;

/** The tour's command lines (its first sh block), comment-only lines dropped. */
function tourLines(): string[] {
  const tour = README.slice(README.indexOf('## A five-minute tour'));
  const block = /```sh\n([\s\S]*?)```/.exec(tour)?.[1] ?? '';
  return block.split('\n').filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
}

/** The one tour line that starts with `prefix` (the test names the step; the README supplies the command). */
function line(prefix: string): string {
  const found = tourLines().filter((l) => l.startsWith(prefix));
  expect(found).toHaveLength(1);
  return found[0]!.replaceAll(README_GATEWAY, stack.baseUrl);
}

let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let dir: string;
let bin: string;
let asset = '';

function env(): NodeJS.ProcessEnv {
  return {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: dir,
    CAIRN_BASE_URL: stack.baseUrl,
    TENANT_ID: tenant.tenant_id,
    KEY: tenant.api_key,
    ASSET: asset,
  };
}

/** Runs one tour line with bash in the user's directory; `input` is what the user types or pipes in. */
function shell(command: string, input = ''): Promise<Run> {
  return runChild('bash', ['-c', command], { cwd: dir, env: env(), input });
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway', 'audit', 'webhook']);
  tenant = await onboard(stack);
  dir = await mkdtemp(join(tmpdir(), 'cairn-tour-'));
  bin = join(dir, '.bin');
  await mkdir(bin);
  await writeFile(
    join(bin, 'npx'),
    `#!/bin/sh\nname="$1"; shift\nexec "${join(REPO_ROOT, 'node_modules', '.bin')}/$name" "$@"\n`,
  );
  const sharpPath = createRequire(import.meta.url).resolve('sharp');
  await writeFile(
    join(bin, 'convert'),
    [
      '#!/usr/bin/env node',
      '// Stand-in for ImageMagick: only "convert IN -quality N OUT" (a JPEG re-encode, which drops the manifest).',
      'const [input, flag, quality, output] = process.argv.slice(2);',
      "if (flag !== '-quality' || !output) { console.error('convert stand-in: convert IN -quality N OUT'); process.exit(2); }",
      `require(${JSON.stringify(sharpPath)})(input).jpeg({ quality: Number(quality) }).toFile(output)`,
      '  .catch((error) => { console.error(error); process.exit(1); });',
      '',
    ].join('\n'),
  );
  await chmod(join(bin, 'npx'), 0o755);
  await chmod(join(bin, 'convert'), 0o755);
  // The tour's two files: a photo and a PNG.
  const astronaut = await readFile(`${PHOTOS}/astronaut.png`);
  await writeFile(join(dir, 'photo.jpg'), await sharp(astronaut).resize(512, 512).jpeg({ quality: 85 }).toBuffer());
  await writeFile(
    join(dir, 'cat.png'),
    await sharp(await readFile(`${PHOTOS}/chelsea.png`))
      .png()
      .toBuffer(),
  );
}, 120_000);
afterAll(() => stopAndRemove(stack, dir));

describe("the README's five-minute tour, run as written", () => {
  it('covers the steps this test runs, and nothing else', () => {
    const steps = [
      'npx cairn login',
      'npx cairn sign',
      'curl',
      'npx cairn verify signed.jpg',
      'convert',
      'npx cairn verify stripped.jpg',
      'npx cairn lookup',
      'npx cairn usage',
      'npx cairn audit --follow',
    ];
    expect(tourLines().map((l) => steps.filter((s) => l.startsWith(s)).length)).toEqual(tourLines().map(() => 1));
  });

  it('login stores the key in ~/.config/cairn, then signing, downloading and verifying work as the comments say', async () => {
    const login = await shell(line('npx cairn login'), `${tenant.api_key}\n`);
    expect(login.code).toBe(0);
    const config = await stat(join(dir, '.config', 'cairn', 'config.json'));
    expect(config.mode & 0o777).toBe(0o600);

    const sign = await shell(line('npx cairn sign'));
    expect(sign.code).toBe(0);
    const rows = sign.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^FILE\s+RESULT\s+ASSET\s+VERIFY PAGE$/);
    expect(rows.filter((r) => /\ssigned\s+a_\w+\s+http/.test(r))).toHaveLength(2);
    expect(sign.stderr).toMatch(/\[1\/2\] photo\.jpg \[#{24}\] 100%/);
    // The user copies the photo's asset id from the table into $ASSET.
    asset = /^photo\.jpg\s+signed\s+(a_\w+)/m.exec(sign.stdout)?.[1] ?? '';
    expect(asset).toMatch(/^a_/);

    const download = await shell(line('curl'));
    expect(download.code).toBe(0);
    expect((await stat(join(dir, 'signed.jpg'))).size).toBeGreaterThan(10_000);

    const verify = await shell(line('npx cairn verify signed.jpg'));
    expect(verify.code).toBe(0);
    expect(verify.stdout).toContain('✔ Verified (verified_manifest_and_watermark_match)');
    expect(verify.stdout).toContain('What this does not prove:');
  }, 180_000);

  it('a stripped copy: watermark_only and exit 1 from verify, the asset from lookup, its origin on /verify', async () => {
    expect(asset).toMatch(/^a_/);
    const strip = await shell(line('convert'));
    expect(strip.code).toBe(0);

    const verify = await shell(line('npx cairn verify stripped.jpg'));
    expect(verify.stdout).toContain('(watermark_only)');
    expect(verify.stdout).toContain(`/v/${asset}`);
    // `; echo $?` prints the exit code a script would read.
    expect(verify.stdout.trim().split('\n').pop()).toBe('1');

    // The signed asset is indexed for lookup once asset.signed is consumed (asynchronously).
    const lookup = await waitFor(
      'the stripped copy found by lookup',
      async () => {
        const run = await shell(line('npx cairn lookup'));
        return run.code === 0 && run.stdout.includes(asset) ? run : undefined;
      },
      60_000,
      500,
    );
    expect(lookup.stdout).toContain(asset);

    // "Open /verify and drop stripped.jpg on it": the page's plain form post, as without JavaScript.
    const page = await fetch(`${stack.baseUrl}/verify`, {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: await readFile(join(dir, 'stripped.jpg')), name: 'stripped.jpg' }),
    });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-status="watermark_only"');
    expect(html).toContain(`href="${stack.baseUrl}/v/${asset}"`);
  }, 180_000);

  it('usage, keys and a webhook in one line; audit --follow prints the log and keeps following', async () => {
    const misc = await shell(line('npx cairn usage'));
    expect(misc.stderr).toBe('');
    expect(misc.code).toBe(0);
    expect(misc.stdout).toContain('image_sign');
    expect(misc.stdout).toMatch(/key_\w+/);
    expect(misc.stdout).toMatch(/wh_\w+/);

    const child = spawn('bash', ['-c', line('npx cairn audit --follow')], { cwd: dir, env: env(), detached: true });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    try {
      await waitFor('the audit log on --follow', () => out.includes('asset.signed'), 60_000, 200);
      // Still following: no exit of its own.
      expect(child.exitCode).toBeNull();
    } finally {
      if (child.pid) process.kill(-child.pid, 'SIGTERM');
    }
  }, 120_000);
});
