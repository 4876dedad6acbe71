/**
 * Hostile input: fast-check properties over the real parsers (the media sniffer, the WAV and
 * image header probes, the JUMBF reader, the sign metadata validator, the gateway's multipart handling through
 * HTTP) and a corpus of hostile containers (deeply nested MP4 boxes, RIFF chunks with absurd sizes, truncated
 * files of every family, PNG chunk bombs) sent to sign and to verify: never a 5xx, never a dead service.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { CairnError, parseSignMetadata, SIGN_METADATA_FIELDS } from '../packages/errors/src/index.js';
import {
  activeManifestLabel,
  childBoxes,
  manifestLabels,
  readBox,
  superboxLabel,
  writeBox,
  writeSuperbox,
} from '../packages/jumbf/src/index.js';
import { checkMediaLimits, probeImage, probeWav, runFfmpeg, sniffMediaType, SNIFF_BYTES } from '@cairn/media';
import { bufferAccess, extractManifestStore } from '../services/verifier/src/domain/c2pa/asset-store.js';
import { CborError, decodeCbor } from '../services/verifier/src/domain/c2pa/cbor.js';
import { coseCertificateChain, signatureCose } from '../services/verifier/src/domain/c2pa/jumbf.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';
import { multipart, onboard, startStack, type Stack, postSign } from './support/stack.js';

const bytes = (max: number) => fc.uint8Array({ maxLength: max }).map((a) => Buffer.from(a));

/** A RIFF/WAVE file of chunks with arbitrary ids and declared sizes (sizes up to 0xFFFFFFFF, bodies short). */
const riffChunks = fc.array(
  fc.record({
    id: fc.constantFrom('fmt ', 'data', 'LIST', 'JUNK', 'fact', 'C2PA'),
    size: fc.oneof(fc.nat(64), fc.constant(0xffffffff), fc.integer({ min: 0, max: 0xffffffff })),
    body: bytes(32),
  }),
  { maxLength: 80 },
);
function riff(chunks: Array<{ id: string; size: number; body: Buffer }>): Buffer {
  const parts = chunks.map(({ id, size, body }) => {
    const head = Buffer.alloc(8);
    head.write(id, 0, 'latin1');
    head.writeUInt32LE(size, 4);
    return Buffer.concat([head, body]);
  });
  const head = Buffer.alloc(12);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(0xffffffff, 4);
  head.write('WAVE', 8, 'latin1');
  return Buffer.concat([head, ...parts]);
}

describe('fuzzed parsers (fast-check)', () => {
  it('sniffMediaType is total: any head answers a known type or null, never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          bytes(SNIFF_BYTES),
          fc
            .tuple(
              fc.constantFrom('RIFF', 'fLaC', 'OggS', 'ID3', '\x1aE\xdf\xa3', '\0\0\0\x18ftyp', '\xff\xfb'),
              bytes(SNIFF_BYTES),
            )
            .map(([magic, rest]) => Buffer.concat([Buffer.from(magic, 'latin1'), rest])),
        ),
        (head) => {
          const sniffed = sniffMediaType(head);
          if (sniffed !== null) expect(['image', 'audio', 'video', 'text']).toContain(sniffed.modality);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('probeWav walks any chunk list without throwing, and a duration it answers is a finite, non-negative number', () => {
    fc.assert(
      fc.property(riffChunks, (chunks) => {
        const probe = probeWav(riff(chunks));
        if (probe?.seconds !== undefined) {
          expect(Number.isFinite(probe.seconds)).toBe(true);
          expect(probe.seconds).toBeGreaterThanOrEqual(0);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('probeImage answers dimensions or null for truncated and bit-flipped images, never rejects', async () => {
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    const jpeg = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#808080' } })
      .jpeg()
      .toBuffer();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(png, jpeg),
        fc.nat(),
        fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 8 }),
        async (original, cut, flips) => {
          const mutated = Buffer.from(original.subarray(0, cut % (original.length + 1)));
          for (const [at, value] of flips) if (mutated.length > 0) mutated[at % mutated.length] = value;
          const probe = await probeImage(mutated);
          if (probe) expect(probe.width! * probe.height!).toBeGreaterThan(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('the JUMBF reader never throws and every box it answers lies inside its parent', () => {
    const valid = writeSuperbox('c2pa', [
      writeSuperbox('urn:c2pa:one', [writeBox('cbor', Buffer.from([1, 2, 3]))]),
      writeSuperbox('urn:c2pa:two'),
    ]);
    const mutatedStore = fc
      .tuple(fc.nat(), fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 6 }))
      .map(([cut, flips]) => {
        const store = Buffer.from(valid.subarray(0, cut % (valid.length + 1)));
        for (const [at, value] of flips) if (store.length > 0) store[at % store.length] = value;
        return store;
      });
    fc.assert(
      fc.property(fc.oneof(bytes(256), mutatedStore), (store) => {
        const root = readBox(store, 0, store.length);
        if (root) {
          expect(root.end).toBeLessThanOrEqual(store.length);
          for (const child of childBoxes(store, root)) {
            expect(child.start).toBeGreaterThanOrEqual(root.contentStart);
            expect(child.end).toBeLessThanOrEqual(root.end);
            superboxLabel(store, child);
          }
        }
        const labels = manifestLabels(store);
        expect(activeManifestLabel(store)).toBe(labels.at(-1));
      }),
      { numRuns: 500 },
    );
    expect(manifestLabels(valid)).toEqual(['urn:c2pa:one', 'urn:c2pa:two']);
  });

  it('the sign metadata validator answers parsed metadata or a cairn.validation.invalid_body CairnError, nothing else', () => {
    const key = fc.oneof(
      fc.constantFrom(
        // The validator's own fields, then names it must refuse.
        ...SIGN_METADATA_FIELDS,
        'prompt',
        'Prompt_text',
        '__proto__',
        'constructor',
      ),
      fc.string(),
    );
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.dictionary(key, fc.oneof(fc.string(), fc.jsonValue()))), (raw) => {
        try {
          const parsed = parseSignMetadata(raw);
          for (const value of Object.values(parsed)) expect(typeof value).toBe('string');
        } catch (error) {
          expect(error).toBeInstanceOf(CairnError);
          expect((error as CairnError).code).toBe('cairn.validation.invalid_body');
        }
      }),
      { numRuns: 500 },
    );
  });
});

/** `original` cut short, with a few bytes overwritten and a few 32-bit fields (box and chunk sizes) made absurd. */
const mutationOf = (original: Buffer) =>
  fc
    .tuple(
      fc.nat(),
      fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 8 }),
      fc.array(fc.tuple(fc.nat(), fc.constantFrom(0, 1, 7, 8, 0x7fffffff, 0xfffffff0, 0xffffffff)), { maxLength: 3 }),
    )
    .map(([cut, flips, sizes]) => {
      const mutated = Buffer.from(original.subarray(0, original.length - (cut % Math.min(original.length, 4096))));
      for (const [at, value] of flips) if (mutated.length > 0) mutated[at % mutated.length] = value;
      for (const [at, value] of sizes) if (mutated.length >= 4) mutated.writeUInt32BE(value, at % (mutated.length - 3));
      return mutated;
    });

describe('fuzzed container and manifest readers (fast-check, real C2PA files mutated)', () => {
  // Real signed files of every container the verifier's own store reader walks: JPEG (APP11), RIFF/WAV, BMFF.
  const files = ['CA.jpg', 'C.jpg', 'sample1.wav', 'nested_moov_1000.mp4'];
  const originals: Buffer[] = [];
  beforeAll(async () => {
    for (const name of files) originals.push(await readFile(join(SHARED_DIR, 'fixtures', 'c2pa-rs', name)));
  });

  it('the manifest store reader answers a store inside the file or null for any mutation, never throws', () => {
    fc.assert(
      fc.property(
        fc.nat().chain((i) => mutationOf(originals[i % originals.length]!)),
        (file) => {
          const store = extractManifestStore(bufferAccess(file));
          if (store) expect(store.length).toBeLessThanOrEqual(file.length);
        },
      ),
      { numRuns: 400 },
    );
    // The unmutated files do carry a store: the property above walks real structures, not only garbage.
    expect(originals.filter((f) => extractManifestStore(bufferAccess(f)) !== null).length).toBeGreaterThan(0);
  });

  it('the COSE certificate reader throws nothing but CborError over mutated signatures and random bytes', () => {
    const signatures = originals
      .map((f) => extractManifestStore(bufferAccess(f)))
      .filter((store): store is Buffer => store !== null)
      .map((store) => {
        const labels = manifestLabels(store);
        return signatureCose(store, labels.at(-1)!);
      })
      .filter((cose): cose is Uint8Array => cose !== undefined)
      .map((cose) => Buffer.from(cose));
    expect(signatures.length).toBeGreaterThan(0);
    const readChain = (cose: Uint8Array) => {
      try {
        const chain = coseCertificateChain(cose);
        for (const der of chain) expect(der).toBeInstanceOf(Uint8Array);
      } catch (error) {
        expect(error).toBeInstanceOf(CborError);
      }
    };
    fc.assert(
      fc.property(
        fc.oneof(
          bytes(512),
          fc.nat().chain((i) => mutationOf(signatures[i % signatures.length]!)),
        ),
        readChain,
      ),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(bytes(256), (raw) => {
        try {
          decodeCbor(raw);
        } catch (error) {
          expect(error).toBeInstanceOf(CborError);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('the media limits check answers a probe or cairn.media.too_large for any WAV or image header, nothing else', async () => {
    const limits = { imagePixels: 1_000_000, audioSeconds: 60, videoPixels: 1_000_000, videoSeconds: 60 };
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          riffChunks.map((chunks) => ({
            file: riff(chunks),
            type: { mediaType: 'audio/wav', modality: 'audio', extension: 'wav' } as const,
          })),
          mutationOf(png).map((file) => ({
            file,
            type: { mediaType: 'image/png', modality: 'image', extension: 'png' } as const,
          })),
        ),
        async ({ file, type }) => {
          try {
            await checkMediaLimits(file, type, limits);
          } catch (error) {
            expect(error).toBeInstanceOf(CairnError);
            expect((error as CairnError).code).toBe('cairn.media.too_large');
          }
        },
      ),
      // Headers ffmpeg has to read (no RIFF chunk list to go by) cost a process each: fewer runs.
      { numRuns: 120 },
    );
  }, 60_000);
});

// ---------------------------------------------------------------- through HTTP

let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let goodPng: Buffer;

type Problem = { code?: string; status?: number };

beforeAll(async () => {
  // The public verify's per-address limit would otherwise answer the fuzzer's 429s instead of its parser.
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '100000',
  });
  tenant = await onboard(stack, 'growth');
  goodPng = await sharp({ create: { width: 320, height: 256, channels: 3, background: '#3a6ea5' } })
    .png()
    .toBuffer();
}, 180_000);
afterAll(() => stack?.stop());

const sign = (file: Buffer, recipe: string, name: string) =>
  postSign(stack, tenant.api_key, { recipe, bytes: file, name });
const verify = (file: Buffer, name: string) =>
  stack.request('/v1/verify', {
    method: 'POST',
    key: tenant.api_key,
    body: multipart({}, { field: 'file', bytes: file, name }),
  });

/** Not a 5xx, and a refusal is an RFC 7807 problem with a cairn.* code. */
async function clean(res: Response): Promise<{ status: number; code?: string }> {
  expect(res.status).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    const body = (await res.json()) as Problem;
    expect(body.code).toMatch(/^cairn\./);
    return { status: res.status, ...(body.code ? { code: body.code } : {}) };
  }
  await res.arrayBuffer();
  return { status: res.status };
}

describe('fuzzed multipart bodies through HTTP (public POST /v1/verify)', () => {
  it('any body under any multipart boundary answers a 4xx problem or a verdict, never a 5xx', async () => {
    const boundary = fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/);
    const part = fc.record({
      name: fc.oneof(fc.constantFrom('file', 'asset', 'metadata', 'x'), fc.string({ maxLength: 20 })),
      filename: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
      headerNoise: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
      body: fc.oneof(bytes(200), fc.constant(goodPng)),
    });
    await fc.assert(
      fc.asyncProperty(
        boundary,
        fc.array(part, { maxLength: 14 }),
        fc.boolean(),
        fc.option(bytes(64), { nil: undefined }),
        async (b, parts, close, garbage) => {
          const chunks: Buffer[] = [];
          for (const p of parts) {
            const disposition = `Content-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}`;
            chunks.push(
              Buffer.from(
                `--${b}\r\n${disposition}\r\n${p.headerNoise ?? 'Content-Type: application/octet-stream'}\r\n\r\n`,
                'utf8',
              ),
              p.body,
              Buffer.from('\r\n'),
            );
          }
          if (close) chunks.push(Buffer.from(`--${b}--\r\n`));
          if (garbage) chunks.push(garbage);
          const res = await stack.request('/v1/verify', {
            method: 'POST',
            headers: { 'content-type': `multipart/form-data; boundary=${b}` },
            body: Buffer.concat(chunks),
          });
          await clean(res);
        },
      ),
      { numRuns: 200 },
    );
  }, 120_000);
});

// ---------------------------------------------------------------- hostile containers

function box(type: string, content: Buffer, size = 8 + content.length): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(size, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, content]);
}

/** ftyp, then `depth` boxes each holding the next (moov/trak/mdia/... cycling), sizes all consistent. */
function nestedMp4(depth: number): Buffer {
  const types = ['moov', 'trak', 'mdia', 'minf', 'stbl', 'udta', 'meta', 'edts'];
  // Written in place (one header per level, each box's size covering all below it): linear, not quadratic.
  const nest = Buffer.alloc(8 * (depth + 1));
  for (let i = 0; i <= depth; i++) {
    nest.writeUInt32BE(nest.length - 8 * i, 8 * i);
    nest.write(i === depth ? 'free' : types[i % types.length]!, 8 * i + 4, 'latin1');
  }
  return Buffer.concat([box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2mp41', 'latin1')), nest]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A valid PNG with an ancillary chunk inserted after IHDR (compressed payloads inflate to `inflated` bytes). */
function pngWith(png: Buffer, type: 'iCCP' | 'zTXt', inflated: number): Buffer {
  const ihdrEnd = 8 + 8 + 13 + 4;
  const keyword = Buffer.from(type === 'iCCP' ? 'bomb profile\0\0' : 'Comment\0\0', 'latin1');
  const chunk = pngChunk(type, Buffer.concat([keyword, deflateSync(Buffer.alloc(inflated), { level: 9 })]));
  return Buffer.concat([png.subarray(0, ihdrEnd), chunk, png.subarray(ihdrEnd)]);
}

function wav(chunks: Array<[string, number, Buffer]>): Buffer {
  return riff(chunks.map(([id, size, body]) => ({ id, size, body })));
}
const fmt = Buffer.alloc(16);
fmt.writeUInt16LE(1, 0);
fmt.writeUInt16LE(1, 2);
fmt.writeUInt32LE(8000, 4);
fmt.writeUInt32LE(16000, 8);
fmt.writeUInt16LE(2, 12);
fmt.writeUInt16LE(16, 14);

describe('hostile containers through HTTP, in sign and in verify', () => {
  const corpus: Array<[string, string, string, () => Promise<Buffer>]> = [];
  const add = (name: string, file: string, recipe: string, make: () => Promise<Buffer> | Buffer) =>
    corpus.push([name, file, recipe, async () => make()]);
  const real: Record<string, Buffer> = {};
  const truncated = (key: string) => () => real[key]!.subarray(0, Math.floor(real[key]!.length / 2));

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-hostile-'));
    try {
      real.jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#a0522d' } })
        .jpeg()
        .toBuffer();
      real.png = goodPng;
      const made: Array<[string, string[]]> = [
        [
          'mp4',
          [
            '-f',
            'lavfi',
            '-i',
            'testsrc=size=64x64:rate=10',
            '-t',
            '1',
            '-c:v',
            'libx264',
            '-pix_fmt',
            'yuv420p',
            '-movflags',
            '+faststart',
          ],
        ],
        ['flac', ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1']],
        ['mp3', ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', '-c:a', 'libmp3lame']],
        ['wav', ['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', '-c:a', 'pcm_s16le']],
      ];
      for (const [ext, args] of made) {
        const out = join(dir, `a.${ext}`);
        await runFfmpeg({ args: ['-y', ...args, out], timeoutMs: 60_000 });
        real[ext] = await readFile(out);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  add('MP4 with 100 000 nested boxes', 'n.mp4', 'video-genai-v1', () => nestedMp4(100_000));
  add('MP4 whose moov claims 4 GB', 'n.mp4', 'video-genai-v1', () =>
    Buffer.concat([
      box('ftyp', Buffer.from('isom\0\0\x02\0isom', 'latin1')),
      box('moov', Buffer.alloc(64), 0xfffffff0),
    ]),
  );
  add('MP4 with a 64-bit box size of 2^63', 'n.mp4', 'video-genai-v1', () => {
    const large = Buffer.alloc(16);
    large.writeUInt32BE(1, 0);
    large.write('mdat', 4, 'latin1');
    large.writeBigUInt64BE(2n ** 63n, 8);
    return Buffer.concat([box('ftyp', Buffer.from('isom\0\0\x02\0isom', 'latin1')), large, Buffer.alloc(32)]);
  });
  add('WAV whose data chunk claims 4 GB', 'w.wav', 'audio-genai-v1', () =>
    wav([
      ['fmt ', 16, fmt],
      ['data', 0xfffffff0, Buffer.alloc(1600)],
    ]),
  );
  add('WAV whose fmt chunk claims 4 GB', 'w.wav', 'audio-genai-v1', () =>
    wav([
      ['fmt ', 0xfffffff0, fmt],
      ['data', 1600, Buffer.alloc(1600)],
    ]),
  );
  add('WAV with a LIST chunk of 2 GB before the data', 'w.wav', 'audio-genai-v1', () =>
    wav([
      ['fmt ', 16, fmt],
      ['LIST', 0x7fffffff, Buffer.alloc(8)],
      ['data', 1600, Buffer.alloc(1600)],
    ]),
  );
  add('WAV with a zero byte rate', 'w.wav', 'audio-genai-v1', () => {
    const zero = Buffer.from(fmt);
    zero.writeUInt32LE(0, 8);
    zero.writeUInt32LE(0, 4);
    return wav([
      ['fmt ', 16, zero],
      ['data', 1600, Buffer.alloc(1600)],
    ]);
  });
  add('WAV of 5 000 empty chunks', 'w.wav', 'audio-genai-v1', () =>
    wav(Array.from({ length: 5000 }, () => ['JUNK', 0, Buffer.alloc(0)] as [string, number, Buffer])),
  );
  add('PNG with a 64 MB iCCP profile', 'p.png', 'image-genai-v1', () => pngWith(real.png!, 'iCCP', 64 * 1024 * 1024));
  add('PNG with a 64 MB zTXt comment', 'p.png', 'image-genai-v1', () => pngWith(real.png!, 'zTXt', 64 * 1024 * 1024));
  for (const [key, file, recipe] of [
    ['jpeg', 't.jpg', 'image-genai-v1'],
    ['png', 't.png', 'image-genai-v1'],
    ['mp4', 't.mp4', 'video-genai-v1'],
    ['wav', 't.wav', 'audio-genai-v1'],
    ['flac', 't.flac', 'audio-genai-v1'],
    ['mp3', 't.mp3', 'audio-genai-v1'],
  ] as const) {
    add(`truncated ${key.toUpperCase()} (first half)`, file, recipe, truncated(key));
  }

  it.each(corpus)(
    '%s: sign answers a clean 4xx (or signs), verify answers a clean 4xx or a verdict; both services still answer',
    async (_name, file, recipe, make) => {
      const hostile = await make();
      const signed = await clean(await sign(hostile, recipe, file));
      const verified = await clean(await verify(hostile, file));
      if (verified.status === 200) expect(verified.code).toBeUndefined();
      // The same signer and verifier (no restart in between) still do their work for an ordinary file.
      const fresh = await sharp({
        create: {
          width: 320,
          height: 256,
          channels: 3,
          background: { r: (fresh_n = (fresh_n + 37) % 256), g: 99, b: 200 },
        },
      })
        .png()
        .toBuffer();
      const after = await sign(fresh, 'image-genai-v1', 'ok.png');
      if (after.status !== 200) throw new Error(`the next sign: ${after.status} ${await after.text()}`);
      const { asset_id } = (await after.json()) as { asset_id: string };
      const signedBytes = Buffer.from(
        await (await stack.request(`/v1/assets/${asset_id}/content`, { key: tenant.api_key })).arrayBuffer(),
      );
      const check = await verify(signedBytes, 'ok.png');
      expect(check.status).toBe(200);
      expect(
        ((await check.json()) as { signals: { c2pa_signature_valid: boolean } }).signals.c2pa_signature_valid,
      ).toBe(true);
      // Recorded for the report below: what each hostile file got.
      outcomes.push(
        `${_name}: sign ${signed.status}${signed.code ? ` ${signed.code}` : ''}, verify ${verified.status}${verified.code ? ` ${verified.code}` : ''}`,
      );
    },
    60_000,
  );

  const outcomes: string[] = [];
  let fresh_n = 0;
  afterAll(() => {
    if (process.env.HOSTILE_REPORT) console.log(outcomes.join('\n'));
  });
});
