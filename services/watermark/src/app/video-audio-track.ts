import type { WatermarkKey } from '../domain/keys.js';
import type { WatermarkDeps } from './deps.js';

/**
 * The audio track of a video carries cairn-audio-wm-v3 (v1 before it) with the frame mark's payload (one payload per asset, the
 * one its manifest names and its registry row records as cairn-sync-v2), under the same key. A copy whose frames
 * lost the mark (downscaled, heavily re-encoded, or just its sound) still names the asset through its audio.
 */

type TrackDeps = Pick<WatermarkDeps, 'pool' | 'codecs' | 'mediaLimits' | 'logger'>;

/**
 * `video` (as EmbedVideo encoded it, its audio copied from the upload) with its first audio track marked and
 * re-encoded in the container's codec family (AAC in MP4, Opus in WebM) at the track's bit rate, the video stream
 * copied. Null when there is no decodable audio track (the video is answered as it is).
 */
export async function markAudioTrack(
  { pool, codecs, mediaLimits }: TrackDeps,
  video: Buffer,
  container: string,
  payload: Uint8Array,
  key: WatermarkKey,
): Promise<{ encoded: Buffer; snrDb: number } | null> {
  const file = await codecs.writeVideo(video);
  try {
    const track = await codecs.decodeVideoAudioTrack(file.path, container, mediaLimits.videoSeconds);
    if (!track) return null;
    const { sampleRate, channels } = track;
    const marked = await pool.embedAudio({ samples: track.samples, sampleRate, channels }, payload, key);
    const encoded = await codecs.replaceVideoAudioTrack(file.path, container, { ...track, samples: marked.samples });
    return { encoded, snrDb: marked.snrDb };
  } finally {
    await file.remove();
  }
}
