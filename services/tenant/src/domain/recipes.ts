import { offersMeter, type Meter, type PlanName } from '@cairn/catalog';

export interface Recipe {
  recipe_id: string;
  name: string;
  description: string;
  media_types: string[];
  layers: { c2pa: boolean; watermark: boolean; soft_binding: boolean; anchor: boolean };
  ai: { digital_source_type: string; ai_generated: boolean };
  retention: { derived_asset_days: number };
  billing: { meter: Meter };
}

const TRAINED_ALGORITHMIC_MEDIA = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';
const DIGITAL_CAPTURE = 'http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture';

/** The recipes every tenant starts with, seeded into tenant.recipes at start (this list is the source). */
export const SEEDED_RECIPES: readonly Recipe[] = [
  {
    recipe_id: 'image-genai-v1',
    name: 'AI-generated image',
    description:
      'C2PA manifest with c2pa.created and trainedAlgorithmicMedia, invisible watermark, perceptual fingerprint, chain anchor.',
    media_types: ['image/jpeg', 'image/png', 'image/webp'],
    layers: { c2pa: true, watermark: true, soft_binding: true, anchor: true },
    ai: { digital_source_type: TRAINED_ALGORITHMIC_MEDIA, ai_generated: true },
    retention: { derived_asset_days: 30 },
    billing: { meter: 'image_sign' },
  },
  {
    // Photographs from a camera or a newsroom: signed without touching a pixel (no watermark), so the file is the
    // capture as it was; the fingerprint and the anchor still lead a stripped copy back.
    recipe_id: 'image-capture-v1',
    name: 'Captured photograph',
    description:
      'C2PA manifest with c2pa.created and digitalCapture, pixels untouched (no watermark), perceptual fingerprint, chain anchor.',
    media_types: ['image/jpeg', 'image/png', 'image/webp'],
    layers: { c2pa: true, watermark: false, soft_binding: true, anchor: true },
    ai: { digital_source_type: DIGITAL_CAPTURE, ai_generated: false },
    retention: { derived_asset_days: 30 },
    billing: { meter: 'image_sign' },
  },
  {
    recipe_id: 'audio-genai-v1',
    name: 'AI-generated audio',
    description:
      'Keyed audio watermark (cairn-audio-wm-v3, 312–3 625 Hz, repeated every 1.5 s: survives MP3/AAC/Opus/Vorbis re-encodes, resampling, gain, trims and ±5 % speed changes), the file kept in its container and quality; C2PA manifest embedded in WAV, MP3 and FLAC, a sidecar manifest bound to the file for OGG; spectral-peak fingerprint, chain anchor.',
    media_types: ['audio/wav', 'audio/mpeg', 'audio/flac', 'audio/ogg'],
    layers: { c2pa: true, watermark: true, soft_binding: true, anchor: true },
    ai: { digital_source_type: TRAINED_ALGORITHMIC_MEDIA, ai_generated: true },
    retention: { derived_asset_days: 30 },
    billing: { meter: 'audio_sign' },
  },
  {
    recipe_id: 'video-genai-v1',
    name: 'AI-generated video',
    description:
      'Keyed image watermark (cairn-sync-v2) on every frame, read from averaged frames: survives H.264 CRF 28 (360p and up: frames below 720p carry a coarser grid), a 0.5× downscale of 720p, crops, frame-rate changes and VP9 transcodes; the first audio track carries the keyed audio watermark (cairn-audio-wm-v3) with the same payload, read when the frames give nothing; the file re-encoded in its codec family (H.264/AAC in MP4, VP9/Opus in WebM) at the measured quality and the audio track bit rate; C2PA manifest embedded in MP4, a sidecar manifest bound to the file for WebM; frame fingerprints, chain anchor.',
    media_types: ['video/mp4', 'video/webm'],
    layers: { c2pa: true, watermark: true, soft_binding: true, anchor: true },
    ai: { digital_source_type: TRAINED_ALGORITHMIC_MEDIA, ai_generated: true },
    retention: { derived_asset_days: 14 },
    billing: { meter: 'video_sign' },
  },
  {
    // Footage from a camera or a newsroom, like image-capture-v1: signed as uploaded (no frame touched, no
    // re-encode), so the file is the capture as it was; frame fingerprints and the anchor lead a stripped copy back.
    recipe_id: 'video-capture-v1',
    name: 'Captured video',
    description:
      'C2PA manifest with c2pa.created and digitalCapture, the file signed as uploaded (no watermark, no re-encode; embedded in MP4, a sidecar manifest bound to the file for WebM), frame fingerprints, chain anchor.',
    media_types: ['video/mp4', 'video/webm'],
    layers: { c2pa: true, watermark: false, soft_binding: true, anchor: true },
    ai: { digital_source_type: DIGITAL_CAPTURE, ai_generated: false },
    retention: { derived_asset_days: 14 },
    billing: { meter: 'video_sign' },
  },
  {
    recipe_id: 'text-genai-v1',
    name: 'AI text generation event',
    description: 'Sidecar C2PA manifest bound to the UTF-8 bytes, text fingerprint (no watermark), chain anchor.',
    media_types: ['text/plain'],
    layers: { c2pa: true, watermark: false, soft_binding: true, anchor: true },
    ai: { digital_source_type: TRAINED_ALGORITHMIC_MEDIA, ai_generated: true },
    retention: { derived_asset_days: 90 },
    billing: { meter: 'text_sign' },
  },
];

/** A recipe is usable by a tenant when its plan offers the recipe's meter. */
export function recipeAvailable(recipe: Recipe, plan: PlanName): boolean {
  return offersMeter(plan, recipe.billing.meter);
}

export function defaultRecipeIds(plan: PlanName, recipes: readonly Recipe[] = SEEDED_RECIPES): string[] {
  return recipes.filter((r) => recipeAvailable(r, plan)).map((r) => r.recipe_id);
}
