import type { Fingerprinters } from '../app/ports.js';
import { fingerprintAudio, fingerprintSoundtrack } from './audio-fingerprint.js';
import { pdqFingerprinter } from './image-hash.js';
import { indexHashes } from './image-variants.js';
import { fingerprintVideo, sampleVideo } from './video-fingerprint.js';

/** The fingerprinters the use cases run (service.ts injects them): PDQ for images and video frames, audio landmarks. */
export const fingerprinters: Fingerprinters = {
  imageAlg: pdqFingerprinter.alg,
  imageHash: (bytes) => pdqFingerprinter.hashImage(bytes),
  imageHashes: (bytes) => indexHashes(pdqFingerprinter, bytes),
  audio: fingerprintAudio,
  soundtrack: fingerprintSoundtrack,
  videoFrames: (bytes, options) => fingerprintVideo(bytes, options),
  sampleVideo: (bytes) => sampleVideo(bytes),
};
