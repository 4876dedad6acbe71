import { z } from 'zod';
import { CairnError } from './problem.js';
import { validationError } from './validation.js';

const text = z.string().trim().min(1).max(500);

/**
 * The sign metadata of the spec, and nothing else: a field not in this list could carry prompt text, so it
 * is refused rather than stored or passed into a public manifest. Shared by the gateway (which refuses at the
 * door, before anything is written) and the signer (which never persists or signs what it would refuse).
 */
export const signMetadataSchema = z
  .object({
    generator: text.optional(),
    model: text.optional(),
    prompt_hash: z
      .string()
      .regex(
        /^sha256:[0-9a-f]{64}$/,
        'must be "sha256:" followed by the 64 lowercase hex digits of the prompt’s SHA-256 (never the prompt itself)',
      )
      .optional(),
    created_at: z
      .string()
      .datetime({ offset: false, message: 'must be an ISO 8601 UTC timestamp, e.g. 2026-11-21T09:30:00Z' })
      .optional(),
    creator: text.optional(),
    legal_entity: text.optional(),
    legal_case_ref: text.optional(),
  })
  .strict();

export type SignMetadata = z.output<typeof signMetadataSchema>;

export const SIGN_METADATA_FIELDS: readonly string[] = Object.keys(signMetadataSchema.shape);

/**
 * Validates sign metadata (400 cairn.validation.invalid_body naming the field). A key that looks like prompt
 * text gets its own message so nobody mistakes it for a typo; the problem names keys, never echoes values.
 */
export function parseSignMetadata(raw: unknown): SignMetadata {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new CairnError('cairn.validation.invalid_body', 'metadata must be a JSON object of strings.', {
      errors: [{ path: 'metadata', message: 'must be a JSON object' }],
    });
  }
  for (const key of Object.keys(raw)) {
    if (/prompt/i.test(key) && key !== 'prompt_hash') {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `metadata.${key}: prompt text must never be sent; send prompt_hash ("sha256:<hex>" of the prompt) instead.`,
        {
          errors: [
            { path: `metadata.${key}`, message: 'prompt text is not accepted; send prompt_hash ("sha256:<hex>")' },
          ],
        },
      );
    }
  }
  const result = signMetadataSchema.safeParse(raw);
  if (!result.success) {
    const error = validationError(
      result.error.issues.map((i) => ({ ...i, path: ['metadata', ...i.path] })),
      'metadata',
    );
    if (result.error.issues.some((i) => i.code === 'unrecognized_keys')) {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `${error.message}. Allowed metadata fields: ${SIGN_METADATA_FIELDS.join(', ')}.`,
        error.extensions,
      );
    }
    throw error;
  }
  return result.data;
}
