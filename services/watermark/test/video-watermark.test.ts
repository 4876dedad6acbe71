import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_MEDIA_LIMITS, probeFfmpeg, runFfmpeg } from '@cairn/media';
import { detectVideoMark, markVideo, type MarkedVideo } from '../src/app/video-watermark.js';
import { createSyncImageWatermark, GRID_AREA } from '../src/domain/image/cairn-sync-v2.js';
import { keyedPayloadFor, payloadHex } from '../src/domain/payload.js';
import { ImageWorkerPool } from '../src/adapters/worker-pool.js';
import { mediaCodecs } from '../src/adapters/media-codecs.js';
import { LumaFrameMarker, syncTile, videoGridArea } from '../src/domain/video/luma-frame-mark.js';
import { VideoFile, parseVideoStream } from '../src/adapters/video-codec.js';
import { addLuma, lumaSum, meanLuma } from '../src/domain/video/luma-mean.js';
import { clip, transcoded } from '../../../test/support/video.js';
import { loadPhoto } from './support/images.js';
import { vp9Webm } from '../bench/video/transcodes.js';

const key = { kid: 'video-test', secret: Uint8Array.from(randomBytes(32)) };
const payload = keyedPayloadFor(key.secret, 'w_01JVIDEOTEST00000000000000');
let pool: ImageWorkerPool;
let original: Buffer;
let marked: MarkedVideo;

const read = async (bytes: Buffer) => {
  const found = await detectVideoMark({ pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS }, bytes, [key]);
  return found.outcome ? payloadHex(found.outcome.detection.payload) : null;
};

/**
 * Luma PSNR of each frame of `answer` against the same frame of `upload`, in decode order (ffmpeg's psnr filter).
 * The files go through temporary files: an MP4 whose index is at the end cannot be read from a pipe.
 */
async function framePsnr(answer: Buffer, upload: Buffer): Promise<number[]> {
  const [a, b] = await Promise.all([VideoFile.write(answer), VideoFile.write(upload)]);
  try {
    const stats = await runFfmpeg({
      args: [
        ...['-i', a.path, '-i', b.path],
        ...['-lavfi', '[0:v]setpts=N[a];[1:v]setpts=N[b];[a][b]psnr=stats_file=-', '-f', 'null', '-'],
      ],
      timeoutMs: 120_000,
    });
    return [...stats.toString('utf8').matchAll(/psnr_y:([\d.]+|inf)/g)].map((m) => Number(m[1]));
  } finally {
    await Promise.all([a.remove(), b.remove()]);
  }
}

async function streamOf(bytes: Buffer) {
  const file = await VideoFile.write(bytes);
  try {
    return { stream: parseVideoStream(await probeFfmpeg(file.path)), text: await probeFfmpeg(file.path) };
  } finally {
    await file.remove();
  }
}

beforeAll(async () => {
  pool = new ImageWorkerPool({ size: 1 });
  // 2 s of a moving test pattern with a tone, 1280×720 at 25 fps, H.264/AAC in MP4: the image grid (chips 1/341 of
  // the width); a 360p clip below carries the coarser grid of small frames.
  original = await clip('testsrc2', { seconds: 2, width: 1280, height: 720, audio: true });
  marked = await markVideo({ pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS }, original, payload, key);
}, 180_000);
afterAll(() => pool?.close(0));

describe('video watermark (cairn-sync-v2 on every frame)', () => {
  it('is the v2 tile: a frame marked here is read by the image detector with its payload', async () => {
    const photo = await loadPhoto('coffee.png', { gray: true });
    const { width, height } = photo;
    const luma = Uint8Array.from(photo.pixels);
    const squaredError = new LumaFrameMarker(syncTile(key.secret, payload), width, height).mark(luma);
    const found = createSyncImageWatermark(key.secret).detect({ pixels: luma, width, height, channels: 1 });
    expect(found && payloadHex(found.payload)).toBe(payloadHex(payload));
    // The squared error the answer's psnr_db is made of is the change the pixels got, counted as they were written.
    let changed = 0;
    for (let i = 0; i < luma.length; i++) changed += (luma[i]! - photo.pixels[i]!) ** 2;
    expect(changed).toBeGreaterThan(0);
    expect(squaredError).toBe(changed);
  });

  it('keeps container, codec, size, frame rate and audio, with luma PSNR ≥ 40 dB', async () => {
    expect(marked.mediaType).toBe('video/mp4');
    expect(marked.psnrDb).toBeGreaterThanOrEqual(40);
    expect(marked.frames).toBe(50);
    const { stream, text } = await streamOf(marked.encoded);
    expect(stream).toMatchObject({ codec: 'h264', width: 1280, height: 720, fps: 25, hasAudio: true });
    expect(text).toMatch(/Audio: aac/);
  });

  it('answers the upload’s frames, each in its place: every frame close to the same frame of the upload', async () => {
    // Frames are marked by several workers at once; the encoder must still get them in order. The mark costs about
    // 41 dB and the encode at the measured CRF a little more; a frame of the moving pattern out of place, ~20 dB.
    const psnr = await framePsnr(marked.encoded, original);
    expect(psnr).toHaveLength(50);
    expect(Math.min(...psnr)).toBeGreaterThanOrEqual(37);
  }, 60_000);

  it('reads the payload from the marked file and after H.264 CRF 28, 24 fps and a VP9 WebM transcode', async () => {
    expect(await read(marked.encoded)).toBe(payloadHex(payload));
    expect(await read(await transcoded(marked.encoded, ['-c:v', 'libx264', '-crf', '28']))).toBe(payloadHex(payload));
    expect(await read(await transcoded(marked.encoded, ['-r', '24', '-c:v', 'libx264', '-crf', '23']))).toBe(
      payloadHex(payload),
    );
    expect(await read(await transcoded(marked.encoded, vp9Webm(34, ['-an'])))).toBe(payloadHex(payload));
  }, 120_000);

  it('marks frames below 720p on a coarser grid that H.264 CRF 28 keeps: a 360p clip reads after it', async () => {
    // At 640×360 the image grid's chips would be 1.9 pixels and the 480p grid's 3.75; the small grid's are 4.7, so
    // even a copy halved to 320×180 keeps chips of 2.3 pixels.
    expect(videoGridArea(1280, 720)).toBe(GRID_AREA);
    expect(videoGridArea(854, 480)).toBe(GRID_AREA / 4);
    expect(videoGridArea(640, 360)).toBe(GRID_AREA / 6.25);
    const small = await clip('testsrc2', { seconds: 2, width: 640, height: 360 });
    const smallMarked = await markVideo(
      { pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS },
      small,
      payload,
      key,
    );
    expect(smallMarked.psnrDb).toBeGreaterThanOrEqual(40);
    const { stream } = await streamOf(smallMarked.encoded);
    expect(stream).toMatchObject({ width: 640, height: 360 });
    expect(await read(await transcoded(smallMarked.encoded, ['-c:v', 'libx264', '-crf', '28']))).toBe(
      payloadHex(payload),
    );
    expect(await read(small)).toBeNull();
  }, 120_000);

  it('finds nothing in the unmarked clip, nor under another key', async () => {
    expect(await read(original)).toBeNull();
    const other = { kid: 'other', secret: Uint8Array.from(randomBytes(32)) };
    const found = await detectVideoMark(
      { pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS },
      marked.encoded,
      [other],
    );
    expect(found.outcome).toBeUndefined();
    expect(found.applicable).toBe(true);
  }, 60_000);

  it('averages windows of frames into the mean the detector reads: each pixel Math.round(sum / count)', () => {
    // Every sum a window of up to 30 frames or a mean of up to 12 windows can hold, each count, halves included.
    for (const count of [1, 2, 3, 4, 5, 6, 7, 8, 12, 24, 25, 30]) {
      const sum = lumaSum(255 * count + 1);
      for (let frame = 0; frame < count; frame++)
        addLuma(
          sum,
          Uint8Array.from(sum, (_, i) => (i + frame) % 256),
        );
      const sums = Array.from(sum);
      const mean = meanLuma(sum, count);
      expect(Array.from(mean)).toEqual(sums.map((s) => Math.round(s / count)));
    }
  });
});
