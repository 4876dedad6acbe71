// The ports the watermark use cases run over, declared here (where the use cases can see them) and implemented
// elsewhere: the mark registry and the generated keys in store/ (Postgres), the worker pool and the media codecs
// in adapters/. service.ts builds the implementations and injects them.
import type { EncodableImageType, MediaLimits } from '@cairn/media';
import type { PcmAudio } from '../domain/audio/apply.js';
import type { AudioMarkAlgorithm } from '../domain/audio-tasks.js';
import type { RawImage } from '../domain/image/raw-image.js';
import type { WatermarkKey } from '../domain/keys.js';
import type {
  AudioFormat,
  DecodedAudio,
  DecodedForEmbedding,
  Transcoded,
  VideoAudioTrack,
  VideoFormat,
  VideoScratch,
} from '../domain/media-formats.js';
import type {
  AudioEmbedOutcome,
  DetectOutcome,
  EmbedOutcome,
  KeyedAlgorithmName,
  MarkLumaOutcome,
} from '../domain/worker-protocol.js';

export interface MarkRecord {
  readonly watermarkId: string;
  readonly payloadHex: string;
  readonly tenantId: string;
  readonly assetId: string;
  readonly algorithm: string;
  /** The watermark key of a keyed mark; null for keyless (cairn-dct-v1) marks. */
  readonly keyId: string | null;
  /** cairn-sync-v2: the coarse luma map of what was marked (content-registration.ts); null otherwise. */
  readonly content: Buffer | null;
  readonly createdAt: Date;
}

export type NewMark = Omit<MarkRecord, 'createdAt' | 'content'>;

/** The payload → watermark id registry, under row-level security (store/marks.ts). */
export interface MarkRecords {
  /** Records a mark as its tenant; idempotent on the watermark id, a clashing id or payload refused. */
  record(mark: NewMark): Promise<MarkRecord>;
  /** `record` of the mark `choose` picks knowing the row already kept for the id, in one transaction. */
  recordFor<T>(
    tenantId: string,
    watermarkId: string,
    choose: (existing: MarkRecord | null) => { mark: NewMark; plan: T },
  ): Promise<{ row: MarkRecord; plan: T }>;
  /** Keeps what a mark was embedded in; the first description stays. */
  describe(tenantId: string, watermarkId: string, content: Uint8Array): Promise<void>;
  /** The tenant's mark with this watermark id, if it has one (another tenant's is invisible). */
  findById(tenantId: string, watermarkId: string): Promise<MarkRecord | null>;
  /** The mark carrying `payloadHex`, whoever's it is (public verification). */
  findByPayload(payloadHex: string): Promise<MarkRecord | null>;
}

export interface SealedKey {
  readonly kid: string;
  readonly sealedKey: string;
}

/** The development key the service made for itself, sealed (store/generated-keys.ts). */
export interface GeneratedKeys {
  /** The stored keys, oldest first; when there are none, `create()` is stored and returned (exactly once). */
  loadOrCreate(create: () => SealedKey): Promise<SealedKey[]>;
}

/** Which worker a detection runs on: the background lane yields to embeds and foreground detections. */
export type Lane = 'foreground' | 'background';

/** The watermark work run off the event loop, in worker threads (adapters/worker-pool.ts). */
export interface WorkerPool {
  /** How many workers run tasks (a video keeps two frames in flight per worker). */
  readonly size: number;
  /** Marks a copy of `image` (its pixel buffer handed to the worker when it can be). */
  embed(
    image: RawImage,
    payload: Uint8Array,
    key?: WatermarkKey,
    algorithm?: KeyedAlgorithmName,
    level?: number | 'content',
  ): Promise<EmbedOutcome>;
  /** Reads the mark of `image` under each of `keys`, then keyless. */
  detect(
    image: RawImage,
    keys?: ReadonlyArray<WatermarkKey>,
    syncGridAreas?: ReadonlyArray<number>,
    lane?: Lane,
  ): Promise<DetectOutcome>;
  /** Reads the cairn-sync-v2 mark just written under `key` from its encoded output (only that algorithm is tried). */
  readBack(image: RawImage, key: WatermarkKey): Promise<DetectOutcome>;
  /** Marks `audio` with `algorithm` under `key`. */
  embedAudio(
    audio: PcmAudio,
    payload: Uint8Array,
    key: WatermarkKey,
    algorithm?: AudioMarkAlgorithm,
  ): Promise<AudioEmbedOutcome>;
  /** Reads an audio mark from the 16 kHz mono mix under each of `keys`, in order. */
  detectAudio(samples: Float32Array, keys: ReadonlyArray<WatermarkKey>): Promise<DetectOutcome>;
  /** Marks one video frame's luma plane with the cairn-sync-v2 tile of `payload` under `key`. */
  markLuma(
    frame: Uint8Array,
    size: { width: number; height: number },
    payload: Uint8Array,
    key: WatermarkKey,
    strengthRms: number,
  ): Promise<MarkLumaOutcome>;
}

/**
 * The service's own decode and encode of the files callers send (they send files, never pixels or samples), under
 * the media limits: images through sharp, audio and video through ffmpeg (adapters/*-codec.ts, mediaCodecs).
 */
export interface MediaCodecs {
  /** The upload to mark, decoded the way it will be re-encoded (its own format, alpha kept where it has one). */
  decodeForEmbedding(encoded: Uint8Array, limits: MediaLimits): Promise<DecodedForEmbedding>;
  /** A file to search, as a verify reads it; `workingSize` shrinks a large upload to the size its grids need. */
  decodeForDetection(encoded: Uint8Array, limits: MediaLimits, options?: { workingSize?: boolean }): Promise<RawImage>;
  /** The marked pixels encoded as the upload was, with their thumbnail. */
  encodeMarked(image: RawImage, mediaType: EncodableImageType): Promise<{ encoded: Buffer; thumbnail: Buffer }>;
  decodeAudioForEmbedding(encoded: Uint8Array, limits: MediaLimits): Promise<DecodedAudio>;
  /** The mono mix at ANALYSIS_RATE of at most `readSeconds`; null without decodable audio. */
  decodeAudioForDetection(encoded: Uint8Array, limits: MediaLimits, readSeconds?: number): Promise<Float32Array | null>;
  encodeMarkedAudio(samples: Float32Array, format: AudioFormat): Promise<Buffer>;
  /** The first audio track of the video at `path`; null when it has none that decodes. */
  decodeVideoAudioTrack(path: string, container: string, maxSeconds: number): Promise<VideoAudioTrack | null>;
  /** The video at `path` with its first audio track replaced by `track`, the video stream copied. */
  replaceVideoAudioTrack(path: string, container: string, track: VideoAudioTrack): Promise<Buffer>;
  /** The upload written where ffmpeg can read it. */
  writeVideo(bytes: Uint8Array): Promise<VideoScratch>;
  probeVideoForEmbedding(bytes: Uint8Array, file: VideoScratch, limits: MediaLimits): Promise<VideoFormat>;
  /** The CRF that keeps the upload's bit rate. */
  measureCrf(file: VideoScratch, format: VideoFormat): Promise<number>;
  /** Every frame decoded, passed through `mark` and encoded like the upload at the CRF `crf` settles on. */
  transcodeFrames(
    file: VideoScratch,
    format: VideoFormat,
    crf: Promise<number>,
    mark: (frame: Uint8Array) => Promise<Uint8Array>,
    options: { timeoutMs: number; maxSeconds: number; inFlight?: number; onProgress?: (frames: number) => void },
  ): Promise<Transcoded>;
  /** Luma windows of the first `maxSeconds` to `visit`, until it answers true; `not_video` without a video stream. */
  visitLumaWindows(
    file: VideoScratch,
    options: { maxSeconds: number; sampleFps: (width: number, height: number) => number; timeoutMs: number },
    visit: (window: { luma: Uint8Array; width: number; height: number; atSeconds: number }) => Promise<boolean>,
  ): Promise<'visited' | 'not_video'>;
}
