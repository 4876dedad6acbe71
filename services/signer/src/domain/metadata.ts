import { z } from 'zod';
import { CairnError, validationError } from '@cairn/errors';
import type { GenerationMetadata } from '../c2pa/index.js';

const text = z.string().trim().min(1).max(500);

/**
 * The sign metadata of the spec, and nothing else: a field not in this list could carry prompt text, so it
 * is refused rather than passed into a public manifest.
 */
export const signMetadataSchema = z
  .object({
    generator: text.optional(),
    model: text.optional(),
    prompt_hash: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" followed by the 64 lowercase hex digits of the prompt’s SHA-256 (never the prompt itself)')
      .optional(),
    created_at: z.string().datetime({ offset: false, message: 'must be an ISO 8601 UTC timestamp, e.g. 2026-11-21T09:30:00Z' }).optional(),
    creator: text.optional(),
    legal_entity: text.optional(),
    legal_case_ref: text.optional(),
  })
  .strict();

const ALLOWED = Object.keys(signMetadataSchema.shape);

/** Validates sign metadata; a `prompt` key gets its own message so nobody mistakes it for a typo. */
export function parseSignMetadata(raw: Record<string, string>): GenerationMetadata {
  for (const key of Object.keys(raw)) {
    if (/prompt/i.test(key) && key !== 'prompt_hash') {
      throw new CairnError('cairn.validation.invalid_body', `metadata.${key}: prompt text must never be sent; send prompt_hash ("sha256:<hex>") instead.`, {
        errors: [{ path: `metadata.${key}`, message: 'prompt text is not accepted; use prompt_hash' }],
      });
    }
  }
  const result = signMetadataSchema.safeParse(raw);
  if (!result.success) {
    const error = validationError(result.error.issues.map((i) => ({ ...i, path: ['metadata', ...i.path] })), 'metadata');
    if (result.error.issues.some((i) => i.code === 'unrecognized_keys')) {
      throw new CairnError('cairn.validation.invalid_body', `${error.message}. Allowed metadata fields: ${ALLOWED.join(', ')}.`, error.extensions as Record<string, unknown>);
    }
    throw error;
  }
  return result.data;
}
