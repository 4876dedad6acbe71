import { WATERMARK_ALG } from '@cairn/catalog';
import type { ImageWatermarkAlgorithm } from './algorithm.js';
import { DctQimWatermark, type DctQimParameters } from './dct-qim.js';

/**
 * The parameters of "cairn-dct-v1", fixed for good: marks already written must stay readable, so any change
 * here is a new algorithm name. Chosen by measurement (services/watermark/docs/image-v1.md): the step gives about
 * 40 dB PSNR on photographs; the grid equals the smallest accepted image, so embedding never has to put more
 * detail into an image than it can hold.
 */
export const CAIRN_DCT_V1: DctQimParameters = {
  grid: 256,
  frequencies: [
    { u: 1, v: 1 },
    { u: 1, v: 2 },
    { u: 2, v: 1 },
    { u: 2, v: 2 },
    { u: 0, v: 3 },
    { u: 3, v: 0 },
  ],
  step: 25,
  seed: 0x63616972, // "cair"
  refinements: 3,
  minConfidence: 0.2,
  minEmbedSize: 256,
  minDetectSize: 128,
};

export const CAIRN_DCT_V1_NAME = WATERMARK_ALG.dctV1;

export function createImageWatermark(): ImageWatermarkAlgorithm {
  return new DctQimWatermark(CAIRN_DCT_V1_NAME, CAIRN_DCT_V1);
}
