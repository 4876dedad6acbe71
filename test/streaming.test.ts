import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, open, readdir, rm, stat } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { collectGarbage } from '../services/signer/test/c2pa-fixtures.js';
import { onboard, startStack, type Stack, postSign } from './support/stack.js';
import { s3rverBucket, spawnS3rver } from './support/s3.js';

// Uploads stream into the blob store (filesystem and S3) with the size cap counted while
// streaming, so the gateway's memory does not grow with the body; downloads stream, and one whose blob ends
// early is a cut-off response, not a hung client or a dead gateway.
const MiB = 1024 * 1024;
/** Below one copy of the 90 MiB body: what a streamed upload may add to this process's resident memory. */
const STREAMED_BOUND = 80 * MiB;
const LIMIT = 90 * MiB;

let fsStack: Stack;
let s3Stack: Stack;
let s3rver: ChildProcess;
let s3Dir: string;
let s3: S3Client;
const gatewayLog: string[] = [];

beforeAll(async () => {
  s3Dir = await mkdtemp(join(tmpdir(), 'cairn-stream-s3rver-'));
  // s3rver in a process of its own, so the memory measured below is the gateway's, not the S3 server's.
  let endpoint: string;
  ({ process: s3rver, endpoint } = await spawnS3rver(s3Dir));
  s3 = await s3rverBucket(endpoint, 'cairn-stream');
  const capture = new Writable({
    write(chunk: Buffer, _encoding, done) {
      gatewayLog.push(chunk.toString());
      done();
    },
  });
  const discard = new Writable({ write: (_chunk: Buffer, _encoding, done) => done() });
  fsStack = await startStack(
    ['gateway', 'signer'],
    { UPLOAD_MAX_BYTES: String(LIMIT), LOG_LEVEL: 'warn' },
    { gateway: capture, signer: discard, billing: discard },
  );
  s3Stack = await startStack(['gateway'], {
    UPLOAD_MAX_BYTES: String(LIMIT),
    BLOB_STORE_URL: 's3://cairn-stream/blobs',
    S3_ENDPOINT: endpoint,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  });
}, 180_000);

afterAll(async () => {
  await fsStack?.stop();
  await s3Stack?.stop();
  s3rver?.kill('SIGKILL');
  await rm(s3Dir, { recursive: true, force: true });
});

/** A multipart sign body of `size` file bytes, produced as it is sent (the test never holds it either). */
function streamedSignBody(size: number, recipe: string): { body: ReadableStream<Uint8Array>; contentType: string } {
  const boundary = `cairn-${crypto.randomUUID()}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="recipe"\r\n\r\n${recipe}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="asset"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const chunk = Buffer.alloc(MiB, 0x5a);
  let sent = 0;
  let stage: 'head' | 'file' | 'tail' | 'done' = 'head';
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stage === 'head') {
        controller.enqueue(head);
        stage = 'file';
      } else if (stage === 'file') {
        const n = Math.min(chunk.length, size - sent);
        controller.enqueue(chunk.subarray(0, n));
        sent += n;
        if (sent === size) stage = 'tail';
      } else if (stage === 'tail') {
        controller.enqueue(tail);
        stage = 'done';
      } else controller.close();
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Sends a streamed upload to /v1/sign and samples this process's resident memory (the gateway runs in it) while
 * it goes: the growth is the highest sample above the one taken just before.
 */
async function signUpload(
  stack: Stack,
  key: string,
  size: number,
): Promise<{ status: number; code: string; rssGrowth: number }> {
  // The recipe does not exist: the whole upload is stored first (that is what is measured), then refused as 400.
  const { body, contentType } = streamedSignBody(size, 'no-such-recipe');
  // Garbage from earlier tests collected first, so the baseline is what the process really holds.
  collectGarbage();
  const baseline = process.memoryUsage.rss();
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  try {
    const res = await fetch(`${stack.baseUrl}/v1/sign`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'idempotency-key': crypto.randomUUID(), 'content-type': contentType },
      body,
      duplex: 'half',
    });
    const problem = (await res.json()) as { code: string };
    return { status: res.status, code: problem.code, rssGrowth: Math.max(peak, process.memoryUsage.rss()) - baseline };
  } finally {
    clearInterval(sampler);
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true }).catch(() => [] as string[]);
  const files: string[] = [];
  for (const entry of entries) if ((await stat(join(dir, entry))).isFile()) files.push(entry);
  return files;
}

const blobRoot = (stack: Stack): string => decodeURIComponent(new URL(String(stack.env.BLOB_STORE_URL)).pathname);
const fsUploads = async (stack: Stack): Promise<string[]> =>
  (await filesUnder(blobRoot(stack))).filter((f) => f.includes('/uploads/'));
async function s3Objects(): Promise<string[]> {
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'cairn-stream', Prefix: 'blobs/' }));
  return (listed.Contents ?? []).map((o) => o.Key ?? '');
}

describe.each([
  ['filesystem', () => fsStack, () => fsUploads(fsStack)],
  ['S3 (multipart)', () => s3Stack, s3Objects],
] as const)('uploads to the %s store', (_name, stackOf, storedUploads) => {
  it('an upload at the limit (90 MiB) is taken whole with the gateway resident memory growing far less than the body; one byte more is 413; neither leaves a blob', async () => {
    const stack = stackOf();
    const tenant = await onboard(stack, 'developer');

    const atLimit = await signUpload(stack, tenant.api_key, LIMIT);
    // Past the size check: refused only for its recipe, after the whole body was stored and read.
    expect([atLimit.status, atLimit.code]).toEqual([400, 'cairn.sign.invalid_recipe']);
    // Holding the body would add at least its 90 MiB (buffering measured 120-176 MiB); streamed, this process
    // (gateway and test client) measured 15-32 MiB, and up to 58 MiB on a machine loaded by a parallel suite.
    expect(atLimit.rssGrowth).toBeLessThan(STREAMED_BOUND);

    const over = await signUpload(stack, tenant.api_key, LIMIT + 1);
    expect([over.status, over.code]).toEqual([413, 'cairn.sign.file_too_large']);
    expect(over.rssGrowth).toBeLessThan(STREAMED_BOUND);

    expect(await storedUploads()).toEqual([]);
  }, 120_000);
});

describe('downloads', () => {
  /** GET /v1/assets/{id}/content read by hand, so the test decides when the blob ends. */
  function download(stack: Stack, key: string, assetId: string): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        `${stack.baseUrl}/v1/assets/${assetId}/content`,
        { headers: { authorization: `Bearer ${key}` } },
        resolve,
      );
      req.once('error', reject);
      req.end();
    });
  }

  it('a blob that ends mid-stream cuts the response off (never a hung or complete-looking download) and the gateway serves the next request', async () => {
    const tenant = await onboard(fsStack, 'developer');
    const sign = async (text: string): Promise<string> => {
      const res = await postSign(fsStack, tenant.api_key, {
        recipe: 'text-genai-v1',
        bytes: Buffer.from(text, 'utf8'),
        name: 'gen.txt',
        type: 'text/plain',
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { asset_id: string }).asset_id;
    };
    const text = 'A long generated passage, line after line.\n'.repeat(5000);
    const broken = await sign(text);
    const intact = await sign(`${text}and one more line.\n`);

    // The broken asset's blob becomes a pipe the test writes into: the gateway streams what arrives, then sees
    // the end long before the recorded size.
    const assetsDir = join(blobRoot(fsStack), tenant.tenant_id, 'assets');
    const file = (await readdir(assetsDir)).find((f) => f.startsWith(broken) && !f.endsWith('.meta'));
    expect(file).toBeDefined();
    const path = join(assetsDir, file!);
    await rm(path);
    execFileSync('mkfifo', [path]);

    const responding = download(fsStack, tenant.api_key, broken);
    const writer = await open(path, 'w'); // settles once the gateway has opened the blob for reading
    await writer.write(Buffer.from(text.slice(0, 16_384), 'utf8'));
    const res = await responding;
    expect(res.statusCode).toBe(200);
    const announced = Number(res.headers['content-length']);
    expect(announced).toBeGreaterThan(16_384);
    let received = 0;
    const ended = new Promise<{ complete: boolean }>((resolve) => {
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        // Everything written so far has arrived: now the blob ends.
        if (received === 16_384) void writer.close();
      });
      res.once('close', () => resolve({ complete: res.complete }));
      res.once('error', () => undefined);
    });
    const outcome = await ended;
    expect(outcome.complete).toBe(false);
    expect(received).toBe(16_384);
    // ...and the gateway says why, on that request.
    const requestId = String(res.headers['x-request-id']);
    const logged = gatewayLog
      .map((l) => JSON.parse(l) as { msg: string; request_id?: string; err?: { message?: string } })
      .find((l) => l.request_id === requestId);
    expect(logged?.msg).toBe('response failed after it started; connection closed');
    expect(logged?.err?.message).toBe(`blob ended after 16384 of its recorded ${announced} bytes`);

    // The gateway is alive and serves the next download whole.
    const next = await fsStack.request(`/v1/assets/${intact}/content`, { key: tenant.api_key });
    expect(next.status).toBe(200);
    expect(Buffer.from(await next.arrayBuffer()).toString('utf8')).toBe(`${text}and one more line.\n`);
  }, 60_000);
});
