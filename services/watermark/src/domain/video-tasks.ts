import { payloadHex } from './payload.js';
import { transferable } from './image-tasks.js';
import { LumaFrameMarker, syncTile, videoGridArea, videoMarkStrength } from './video/luma-frame-mark.js';
import type { VideoWorkerRequest, VideoWorkerResponse } from './worker-protocol.js';

/**
 * The frame markers a worker holds: one per (key, payload, frame size, strength), so a video's tile and grid
 * constants are made on its first frame and reused for the rest. A few videos at a time at most.
 */
export class VideoMarkers {
  private readonly markers = new Map<string, LumaFrameMarker>();

  forRequest(request: VideoWorkerRequest): LumaFrameMarker {
    const id = [
      request.key.kid,
      Buffer.from(request.key.secret).toString('hex'),
      payloadHex(request.payload),
      request.width,
      request.height,
      request.strengthRms,
    ].join('|');
    let marker = this.markers.get(id);
    if (!marker) {
      const gridArea = videoGridArea(request.width, request.height);
      marker = new LumaFrameMarker(
        syncTile(request.key.secret, request.payload),
        request.width,
        request.height,
        videoMarkStrength(request.strengthRms, gridArea),
        gridArea,
      );
      if (this.markers.size >= MAX_MARKERS) this.markers.delete(this.markers.keys().next().value!);
      this.markers.set(id, marker);
    }
    return marker;
  }
}

/** Videos marked at once by one worker before the oldest marker is dropped (and made again if needed). */
const MAX_MARKERS = 4;

/** Runs one video request (apart from the message loop, so it can be tested without threads). */
export function runVideoTask(
  markers: VideoMarkers,
  request: VideoWorkerRequest,
): { response: VideoWorkerResponse; transfer: ArrayBuffer[] } {
  try {
    const squaredError = markers.forRequest(request).mark(request.frame);
    return {
      response: { id: request.id, ok: true, op: 'mark-luma', outcome: { frame: request.frame, squaredError } },
      transfer: transferable(request.frame),
    };
  } catch (error) {
    const { name, message } = error instanceof Error ? error : new Error(String(error));
    return { response: { id: request.id, ok: false, error: { name, message } }, transfer: [] };
  }
}
