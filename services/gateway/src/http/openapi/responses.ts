import { z } from 'zod';
import { ERROR_CATALOG } from '@cairn/errors';

/**
 * Answer shapes for the OpenAPI document. Requests are described by the very schemas the routes validate with
 * (exported from the route modules); answers are built by present* functions, so these describe them for readers
 * and the SDK, and the OpenAPI test checks live answers against them.
 */
const errorCodes = Object.keys(ERROR_CATALOG) as [keyof typeof ERROR_CATALOG, ...Array<keyof typeof ERROR_CATALOG>];

export const problemSchema = z
  .object({
    type: z.string().describe('URL of this code in the error catalogue (/docs/api/errors#<code>)'),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.enum(errorCodes),
    request_id: z.string(),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('Field-level messages for validation failures'),
  })
  .describe('RFC 7807 problem details');

export const signResultSchema = z.object({
  asset_id: z.string(),
  watermark_id: z.string().optional(),
  manifest_id: z.string(),
  manifest_uri: z.string(),
  verifier_url: z.string(),
  asset_url: z.string(),
  media_type: z.string(),
  anchor: z.object({ batch_id: z.string(), status: z.string() }).optional(),
  created_at: z.string(),
  expires_at: z.string(),
  warnings: z
    .array(z.enum(['watermark_not_embedded']))
    .optional()
    .describe(
      'Notes on the sign, a closed set: watermark_not_embedded (the recipe asks for a watermark, none that reads back could be embedded, watermark_id is absent)',
    ),
  watermark_not_embedded_reason: z
    .string()
    .optional()
    .describe('With watermark_not_embedded: why (content too flat, too small, …)'),
});

export const verificationSchema = z.object({
  status: z
    .string()
    .describe(
      'The verdict: one of the closed verification codes, e.g. verified_manifest_and_watermark_match, manifest_tampered, watermark_only',
    ),
  confidence: z.number().nullable(),
  signals: z.record(z.string(), z.union([z.boolean(), z.string(), z.number()])),
  claims: z.record(z.string(), z.union([z.boolean(), z.string()])).optional(),
  matches: z.array(
    z.object({
      asset_id: z.string(),
      manifest_uri: z.string(),
      verifier_url: z.string(),
      via: z.string(),
      similarity: z.number(),
    }),
  ),
  warnings: z.array(z.string()),
  developer_explanation: z.string(),
  user_explanation: z.string(),
  proves: z.array(z.string()),
  does_not_prove: z.array(z.string()),
  manifest_id: z.string().optional(),
  asset_id: z.string().optional(),
  verified_at: z.string(),
});

export const jobSchema = z
  .object({
    job_id: z.string(),
    kind: z.enum(['sign', 'verify']),
    status: z.string().describe('done when the result fields are present; failed carries a problem'),
    poll_url: z.string(),
    result: verificationSchema.optional().describe('A done verify job: the Verification result'),
    problem: problemSchema.optional().describe('A failed job: why'),
    attempts: z.number().int(),
    progress: z
      .object({
        stage: z.enum(['reading', 'watermarking', 'signing', 'storing']),
        fraction: z
          .number()
          .min(0)
          .max(1)
          .describe('Never falls within a run: frames marked / frames expected while a video is watermarked'),
        updated_at: z.string(),
      })
      .optional()
      .describe('A sign job: how far its current run is, written at most every 500 ms; absent before it reports'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .catchall(z.unknown())
  .describe('A done sign job also carries the Sign result fields.');

/**
 * Named answer schemas: the document lists them under components.schemas and refers to them. A local registry
 * (not zod's global one) so only these become components.
 */
export const components = z.registry<{ id: string }>();
components.add(problemSchema, { id: 'Problem' });
components.add(signResultSchema, { id: 'SignResult' });
components.add(verificationSchema, { id: 'VerificationResult' });
components.add(jobSchema, { id: 'Job' });

/** Answers without a schema of their own here: any JSON object. */
export const jsonObject = z.record(z.string(), z.unknown());
