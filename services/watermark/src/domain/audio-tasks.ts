import { embedAudioMark } from './audio/apply.js';
import { analyseAudio, AudioWatermark, CAIRN_AUDIO_WM_V1_NAME } from './audio/cairn-audio-wm-v1.js';
import { analyseAudioV3, AudioWatermarkV3, CAIRN_AUDIO_WM_V3_NAME } from './audio/cairn-audio-wm-v3.js';
import type { ContrastAnalysis, ContrastQimMark } from './audio/contrast-qim.js';
import type { WatermarkKey } from './keys.js';
import { transferable } from './image-tasks.js';
import type { AudioMarkAlgorithm, AudioWorkerRequest, AudioWorkerResponse } from './worker-protocol.js';

export type { AudioMarkAlgorithm } from './worker-protocol.js';

/**
 * What detection tries, in order: the mark new uploads carry, then the one earlier uploads carry (v2 was never
 * written). Each is analysed once and decoded under every key.
 */
const READ_ORDER: ReadonlyArray<{ name: AudioMarkAlgorithm; analyse: (samples: Float32Array) => ContrastAnalysis }> = [
  { name: CAIRN_AUDIO_WM_V3_NAME, analyse: analyseAudioV3 },
  { name: CAIRN_AUDIO_WM_V1_NAME, analyse: analyseAudio },
];

/** The audio watermarks under each key a worker is handed, each layout built once per key id. */
export class AudioAlgorithms {
  private readonly keyed = new Map<string, { readonly secret: Buffer; readonly watermark: ContrastQimMark }>();

  forKey(key: WatermarkKey, algorithm: AudioMarkAlgorithm): ContrastQimMark {
    const secret = Buffer.from(key.secret);
    const id = `${algorithm}|${key.kid}`;
    const known = this.keyed.get(id);
    if (known && known.secret.equals(secret)) return known.watermark;
    const watermark = algorithm === CAIRN_AUDIO_WM_V3_NAME ? new AudioWatermarkV3(secret) : new AudioWatermark(secret);
    this.keyed.set(id, { secret, watermark });
    return watermark;
  }
}

/** Runs one audio request (apart from the message loop, so it can be tested without threads). */
export function runAudioTask(
  algorithms: AudioAlgorithms,
  request: AudioWorkerRequest,
): { response: AudioWorkerResponse; transfer: ArrayBuffer[] } {
  try {
    if (request.op === 'embed-audio') {
      const { algorithm } = request;
      const { snrDb } = embedAudioMark(algorithms.forKey(request.key, algorithm), request.audio, request.payload);
      const outcome = {
        samples: request.audio.samples,
        snrDb,
        algorithm,
        keyId: request.key.kid,
      };
      return {
        response: { id: request.id, ok: true, op: 'embed-audio', outcome },
        transfer: transferable(
          new Uint8Array(
            request.audio.samples.buffer,
            request.audio.samples.byteOffset,
            request.audio.samples.byteLength,
          ),
        ),
      };
    }
    // The analysis (the costly part) does not depend on the key: made once per algorithm, then each key decodes it.
    for (const { name, analyse } of READ_ORDER) {
      const analysis = analyse(request.samples);
      for (const key of request.keys) {
        const detection = algorithms.forKey(key, name).decode(analysis);
        if (detection)
          return {
            response: {
              id: request.id,
              ok: true,
              op: 'detect-audio',
              outcome: {
                detection: { payload: detection.payload, confidence: detection.confidence },
                algorithm: name,
                keyId: key.kid,
              },
            },
            transfer: [],
          };
      }
    }
    return {
      response: {
        id: request.id,
        ok: true,
        op: 'detect-audio',
        outcome: { detection: null, algorithm: CAIRN_AUDIO_WM_V3_NAME, keyId: null },
      },
      transfer: [],
    };
  } catch (error) {
    const { name, message } = error instanceof Error ? error : new Error(String(error));
    return { response: { id: request.id, ok: false, error: { name, message } }, transfer: [] };
  }
}
