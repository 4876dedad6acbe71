// The watermark service's layers of a sign, alone, for `bench:fleet-cost` (which runs this as a child process and
// reads its JSON answer): decode, embed, encode (and the thumbnail the signer embeds) of an image, a song or a clip,
// each timed as CPU of this process with its threads and reaped children. Writes what the next service's layers
// take: `<out>/marked` (and `<out>/thumbnail` for an image).
//
//   node --import tsx services/watermark/bench/kernels.ts <image|song|clip> <file> <out dir> <rounds>
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_MEDIA_LIMITS, encodeImage, makeThumbnail } from '@cairn/media';
import { createLogger } from '../../../packages/logging/src/index.js';
import { answer, cpuNowMs, kernelMs, median, type Kernels } from '../../../test/support/kernels.js';
import { decodeForEmbedding } from '../src/adapters/image-codec.js';
import { decodeAudioForEmbedding, encodeMarkedAudio } from '../src/adapters/audio-codec.js';
import { defaultPoolSize, ImageWorkerPool } from '../src/adapters/worker-pool.js';
import { markAudioTrack } from '../src/app/video-audio-track.js';
import { markVideo } from '../src/app/video-watermark.js';
import { audioPayloadFor } from '../src/domain/audio/cairn-audio-wm-v1.js';
import { CAIRN_AUDIO_WM_V3_NAME } from '../src/domain/audio/cairn-audio-wm-v3.js';
import { AudioAlgorithms, runAudioTask } from '../src/domain/audio-tasks.js';
import { ImageAlgorithms, NEW_KEYED_ALGORITHM, runImageTask } from '../src/domain/image-tasks.js';
import { keyedPayloadFor } from '../src/domain/payload.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { mediaCodecs } from '../src/adapters/media-codecs.js';

const [kind, path, outArg, roundsArg] = process.argv.slice(2);
if (!kind || !path || !outArg || !roundsArg)
  throw new Error('usage: kernels.ts <image|song|clip> <file> <out dir> <rounds>');
const rounds = Number(roundsArg);
const out: string = outArg;
const file = await readFile(path);
const wmKey = { kid: 'bench', secret: Uint8Array.from(randomBytes(32)) };

async function image(): Promise<Kernels> {
  const algorithms = new ImageAlgorithms();
  const decode = await kernelMs(rounds, () => decodeForEmbedding(file, DEFAULT_MEDIA_LIMITS));
  const { image, mediaType } = decode.value;
  const payload = keyedPayloadFor(wmKey.secret, 'w_bench');
  // The worker marks its own copy of the pixels in place: the copy is made outside the timing.
  let marked: RawImage = image;
  const embedSamples: number[] = [];
  for (let i = 0; i <= rounds; i++) {
    const own = { ...image, pixels: image.pixels.slice() };
    const t0 = cpuNowMs();
    const { response } = runImageTask(
      algorithms,
      { id: i, op: 'embed', image: own, payload, key: wmKey, algorithm: NEW_KEYED_ALGORITHM },
      { pixelsOwned: true },
    );
    if (i > 0) embedSamples.push(cpuNowMs() - t0);
    if (!response.ok || response.op !== 'embed') throw new Error(`embed failed: ${JSON.stringify(response)}`);
    marked = response.outcome.image;
  }
  const pixels = {
    pixels: Buffer.from(marked.pixels.buffer, marked.pixels.byteOffset, marked.pixels.byteLength),
    width: marked.width,
    height: marked.height,
    channels: marked.channels as 3 | 4,
  };
  const encode = await kernelMs(rounds, () => encodeImage(pixels, mediaType));
  const thumbnail = await kernelMs(rounds, () => makeThumbnail(pixels));
  await writeFile(join(out, 'marked'), encode.value);
  await writeFile(join(out, 'thumbnail'), thumbnail.value);
  return [
    ['decode', decode.ms],
    ['embed (mark, PSNR, description)', median(embedSamples)],
    ['encode', encode.ms],
    ['thumbnail', thumbnail.ms],
  ];
}

async function song(): Promise<Kernels> {
  const algorithms = new AudioAlgorithms();
  const decode = await kernelMs(rounds, () => decodeAudioForEmbedding(file, DEFAULT_MEDIA_LIMITS));
  const { samples, format } = decode.value;
  const payload = audioPayloadFor(wmKey.secret, 'w_bench');
  const embed = await kernelMs(rounds, () => {
    const audio = { samples: samples.slice(), sampleRate: format.sampleRate, channels: format.channels };
    const { response } = runAudioTask(algorithms, {
      id: 1,
      op: 'embed-audio',
      audio,
      payload,
      key: wmKey,
      algorithm: CAIRN_AUDIO_WM_V3_NAME,
    });
    if (!response.ok || response.op !== 'embed-audio') throw new Error(`embed failed: ${JSON.stringify(response)}`);
    return response.outcome.samples;
  });
  const encode = await kernelMs(rounds, () => encodeMarkedAudio(embed.value, format));
  await writeFile(join(out, 'marked'), encode.value);
  return [
    ['decode', decode.ms],
    ['embed', embed.ms],
    ['encode', encode.ms],
  ];
}

async function clip(): Promise<Kernels> {
  // As the service runs it: one worker per core (their threads are this process's, so their CPU counts).
  const pool = new ImageWorkerPool({ size: defaultPoolSize() });
  await pool.ready();
  try {
    const logger = createLogger({ service: 'bench', level: 'warn' });
    const deps = { pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS, logger };
    const payload = keyedPayloadFor(wmKey.secret, 'w_bench');
    const frames = await kernelMs(rounds, () => markVideo(deps, file, payload, wmKey));
    const marked = frames.value;
    const sound = await kernelMs(rounds, () => markAudioTrack(deps, marked.encoded, marked.mediaType, payload, wmKey));
    await writeFile(join(out, 'marked'), sound.value?.encoded ?? marked.encoded);
    return [
      ['decode, embed, encode (frames)', frames.ms],
      ['sound track mark', sound.ms],
    ];
  } finally {
    await pool.close(0);
  }
}

const layers = { image, song, clip }[kind as 'image' | 'song' | 'clip'];
if (!layers) throw new Error(`unknown kind ${kind}`);
answer(await layers());
