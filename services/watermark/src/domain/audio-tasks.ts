import { embedAudioMark } from './audio/apply.js';
import { analyseAudio, AudioWatermark, CAIRN_AUDIO_WM_V1_NAME } from './audio/cairn-audio-wm-v1.js';
import type { WatermarkKey } from './keys.js';
import { transferable } from './image-tasks.js';
import type { AudioWorkerRequest, AudioWorkerResponse } from './worker-protocol.js';

/** The audio watermark under each key a worker is handed, its layout built once per key id. */
export class AudioAlgorithms {
  private readonly keyed = new Map<string, { readonly secret: Buffer; readonly watermark: AudioWatermark }>();

  forKey(key: WatermarkKey): AudioWatermark {
    const secret = Buffer.from(key.secret);
    const known = this.keyed.get(key.kid);
    if (known && known.secret.equals(secret)) return known.watermark;
    const watermark = new AudioWatermark(secret);
    this.keyed.set(key.kid, { secret, watermark });
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
      const { snrDb } = embedAudioMark(algorithms.forKey(request.key), request.audio, request.payload);
      const outcome = {
        samples: request.audio.samples,
        snrDb,
        algorithm: CAIRN_AUDIO_WM_V1_NAME,
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
    // The analysis (the costly part) does not depend on the key: made once, then each key decodes it.
    const analysis = analyseAudio(request.samples);
    for (const key of request.keys) {
      const detection = algorithms.forKey(key).decode(analysis);
      if (detection)
        return {
          response: {
            id: request.id,
            ok: true,
            op: 'detect-audio',
            outcome: {
              detection: { payload: detection.payload, confidence: detection.confidence },
              algorithm: CAIRN_AUDIO_WM_V1_NAME,
              keyId: key.kid,
            },
          },
          transfer: [],
        };
    }
    return {
      response: {
        id: request.id,
        ok: true,
        op: 'detect-audio',
        outcome: { detection: null, algorithm: CAIRN_AUDIO_WM_V1_NAME, keyId: null },
      },
      transfer: [],
    };
  } catch (error) {
    const { name, message } = error instanceof Error ? error : new Error(String(error));
    return { response: { id: request.id, ok: false, error: { name, message } }, transfer: [] };
  }
}
