import { z } from 'zod';
import { FINGERPRINT_ALG, IMAGE_WATERMARK_ALGS, WATERMARK_ALG } from '@cairn/catalog';
import type { ErrorCode } from '@cairn/errors';
import { onboardBody } from '../routes/onboard.js';
import { createKeyBody, createTenantBody, listQuery as tenantKeyListQuery, settingsBody } from '../routes/tenants.js';
import { registerBody } from '../routes/signing-credentials.js';
import { fieldsSchema } from '../routes/sign.js';
import { createUploadBody, uploadContentQuery } from '../routes/upload-sessions.js';
import { CRJSON_MEDIA_TYPE, jsonInput, trustListBody, verifyQuery } from '../routes/verify.js';
import { bindingBody } from '../routes/lookup.js';
import { auditQuery, exportBody } from '../routes/audit.js';
import {
  createBody as webhookBody,
  deliveriesQuery,
  listQuery as webhookListQuery,
  rotateBody as webhookRotateBody,
} from '../routes/webhooks.js';
import {
  byBindingBody,
  byBindingPostQuery,
  byBindingQuery,
  byContentQuery,
  byReferenceBody,
  C2PA_DISCOVERY_PATH,
  C2PA_RESOLUTION_PREFIX,
  manifestQuery,
  SUPPORTED_CAPABILITIES,
} from '../routes/c2pa-resolution.js';
import { bindingBody as c2paBindingBody, storeManifestQuery, verifyReceiptBody } from '../routes/c2pa-repository.js';
import { jobSchema, jsonObject, signResultSchema, verificationSchema } from './responses.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A request body: JSON validated by `schema`, or multipart whose text fields `schema` validates plus file parts. */
export type RequestBodyDoc =
  | { kind: 'json'; schema: z.ZodType; example: unknown }
  | {
      kind: 'multipart';
      schema?: z.ZodType;
      files: Record<string, string>;
      required: string[];
      example?: Record<string, string>;
    };

export interface AnswerDoc {
  status: number;
  description: string;
  /** application/json unless `contentType` says otherwise. */
  schema?: z.ZodType;
  contentType?: string;
  example?: unknown;
}

export interface OperationDoc {
  method: HttpMethod;
  /** The Express path, e.g. /v1/jobs/:job_id. */
  path: string;
  operationId: string;
  summary: string;
  /** What the summary cannot say: the rules a client must know to call it right. */
  description?: string;
  tag: string;
  /** 'key': needs an API key with this scope; 'optional': a key changes what happens; 'public'. */
  auth: { kind: 'key'; scope: 'read' | 'verify' | 'sign' | 'admin' } | { kind: 'optional' } | { kind: 'public' };
  query?: z.ZodType;
  body?: RequestBodyDoc;
  /** Headers the operation reads, beyond Authorization. */
  headers?: Array<{ name: string; required: boolean; description: string }>;
  answers: AnswerDoc[];
  /** The cairn.* problems this operation can answer, beyond those every keyed or body-taking operation can. */
  errors: ErrorCode[];
}

const ASSET = 'ast_01JBZ3Q8M6V4W2X9Y7T5R3N1PK';
const MANIFEST = 'urn:c2pa:3f2a9c1e-6b7d-4e8f-9a0b-1c2d3e4f5a6b';
const TIME = '2025-06-01T12:00:00Z';

const signExample = {
  asset_id: ASSET,
  manifest_id: MANIFEST,
  manifest_uri: `https://cairn.example/v1/manifests/${MANIFEST}`,
  verifier_url: `https://cairn.example/v/${ASSET}`,
  asset_url: `https://cairn.example/v1/assets/${ASSET}/content`,
  media_type: 'image/jpeg',
  created_at: TIME,
  expires_at: '2025-07-01T12:00:00Z',
};
const verificationExample = {
  status: 'verified_manifest_and_watermark_match',
  confidence: 0.99,
  signals: {
    c2pa_manifest_present: true,
    c2pa_signature_valid: true,
    signer_trusted: true,
    watermark_present: true,
    watermark_payload_valid: true,
  },
  claims: { generator: 'Cairn', ai_generated: true, signed_by: 'Cairn Demo', signed_at: TIME },
  matches: [],
  warnings: [],
  developer_explanation: 'The C2PA signature is valid and the watermark payload matches the manifest record.',
  user_explanation: 'This file carries intact provenance from Cairn Demo.',
  proves: ['The file was signed by Cairn Demo and not changed since.'],
  does_not_prove: ['That what the file shows is true.'],
  manifest_id: MANIFEST,
  asset_id: ASSET,
  verified_at: TIME,
};

const json = (status: number, description: string, example: unknown, schema: z.ZodType = jsonObject): AnswerDoc => ({
  status,
  description,
  schema,
  example,
});
const noContent: AnswerDoc = { status: 204, description: 'Done; no body' };
const html = (description: string): AnswerDoc => ({ status: 200, description, contentType: 'text/html' });

/** `?format=crjson` or `Accept: application/ld+json`: the C2PA validation report (docs/api.md, "Validation report"). */
const crJsonAnswer: AnswerDoc = {
  status: 200,
  description:
    'format=crjson or Accept: application/ld+json: the C2PA validation report of the same reading, a crJSON document (C2PA 2.4)',
  contentType: CRJSON_MEDIA_TYPE,
};
const IDEMPOTENCY = {
  name: 'Idempotency-Key',
  required: true,
  description:
    '8 to 255 visible ASCII characters (a UUID is best); a retry with the same key never does the work twice',
};

const C2PA = C2PA_RESOLUTION_PREFIX;

/**
 * Every operation the gateway serves. Request schemas are imported from the route modules that validate with
 * them, so the document cannot describe a twin (test/openapi.test.ts checks identity and coverage).
 */
export const OPERATIONS: OperationDoc[] = [
  {
    method: 'post',
    path: '/v1/onboard',
    operationId: 'onboard',
    summary: 'Create a tenant and its first admin key (self-service)',
    tag: 'Tenants',
    auth: { kind: 'public' },
    headers: [IDEMPOTENCY],
    body: {
      kind: 'json',
      schema: onboardBody,
      example: {
        email: 'dev@example.com',
        tenant_name: 'Example Studio',
        plan: 'developer',
        payment_method_id: 'pm_card_visa',
      },
    },
    answers: [
      json(201, 'Tenant created; the API key is shown once', {
        tenant_id: 'ten_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        api_key: 'ck_live_…',
        plan: 'developer',
      }),
    ],
    errors: [
      'cairn.onboard.browser_not_allowed',
      'cairn.onboard.missing_idempotency_key',
      'cairn.onboard.idempotency_conflict',
      'cairn.onboard.plan_not_available',
      'cairn.onboard.invalid_payment_method',
      'cairn.onboard.payment_declined',
      'cairn.idempotency.in_progress',
      'cairn.ratelimit.exceeded',
      'cairn.unavailable',
    ],
  },
  {
    method: 'post',
    path: '/v1/tenants',
    operationId: 'createSubTenant',
    summary: 'Create a sub-tenant',
    tag: 'Tenants',
    auth: { kind: 'key', scope: 'admin' },
    body: {
      kind: 'json',
      schema: createTenantBody,
      example: { name: 'Newsroom EU', plan: 'growth', spending_cap_usd: 500 },
    },
    answers: [
      json(201, 'The sub-tenant', { tenant_id: 'ten_01JBZ3Q8M6V4W2X9Y7T5R3N1PQ', name: 'Newsroom EU', plan: 'growth' }),
    ],
    errors: [
      'cairn.tenant.subtenants_not_available',
      'cairn.tenant.plan_not_allowed',
      'cairn.tenant.spending_cap_above_parent',
    ],
  },
  {
    method: 'get',
    path: '/v1/tenants/:tenant_id',
    operationId: 'getTenant',
    summary: 'Read a tenant you manage',
    tag: 'Tenants',
    auth: { kind: 'key', scope: 'admin' },
    answers: [
      json(200, 'The tenant', {
        tenant_id: 'ten_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        name: 'Example Studio',
        plan: 'developer',
      }),
    ],
    errors: ['cairn.not_found'],
  },
  {
    method: 'post',
    path: '/v1/tenants/:tenant_id/keys',
    operationId: 'createApiKey',
    summary: 'Create an API key',
    tag: 'Tenants',
    auth: { kind: 'key', scope: 'admin' },
    body: { kind: 'json', schema: createKeyBody, example: { scope: 'sign', description: 'CI pipeline' } },
    answers: [
      json(201, 'The key; its secret is shown once', {
        key_id: 'key_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        scope: 'sign',
        api_key: 'ck_live_…',
      }),
    ],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: '/v1/tenants/:tenant_id/keys',
    operationId: 'listApiKeys',
    summary: 'List API keys',
    tag: 'Tenants',
    auth: { kind: 'key', scope: 'admin' },
    query: tenantKeyListQuery,
    answers: [
      json(200, 'The keys (no secrets)', { keys: [{ key_id: 'key_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', scope: 'sign' }] }),
    ],
    errors: ['cairn.not_found'],
  },
  {
    method: 'delete',
    path: '/v1/tenants/:tenant_id/keys/:key_id',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key',
    tag: 'Tenants',
    auth: { kind: 'key', scope: 'admin' },
    answers: [noContent],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: '/v1/tenants/:tenant_id/settings',
    operationId: 'getTenantSettings',
    summary: 'Read tenant settings',
    tag: 'Tenants',
    auth: { kind: 'key', scope: 'admin' },
    answers: [json(200, 'The settings', { audit_retention_days: 365, spending_cap_usd: null })],
    errors: ['cairn.not_found'],
  },
  {
    method: 'patch',
    path: '/v1/tenants/:tenant_id/settings',
    operationId: 'updateTenantSettings',
    summary: 'Change tenant settings',
    tag: 'Tenants',
    auth: { kind: 'key', scope: 'admin' },
    body: { kind: 'json', schema: settingsBody, example: { audit_retention_days: 730 } },
    answers: [json(200, 'The settings', { audit_retention_days: 730, spending_cap_usd: null })],
    errors: ['cairn.not_found', 'cairn.settings.out_of_range', 'cairn.tenant.spending_cap_above_parent'],
  },
  {
    method: 'get',
    path: '/v1/recipes',
    operationId: 'listRecipes',
    summary: 'List the signing recipes your tenant may use',
    tag: 'Signing',
    auth: { kind: 'key', scope: 'read' },
    answers: [
      json(200, 'The recipes', { recipes: [{ recipe_id: 'photo-v1', media_types: ['image/jpeg', 'image/png'] }] }),
    ],
    errors: [],
  },
  {
    method: 'post',
    path: '/v1/signing-credentials',
    operationId: 'registerSigningCredential',
    summary: 'Register your own signing key (Enterprise, BYOK), proving you hold it',
    description:
      "The chain (PEM, leaf first, leaf EC P-256), the endpoint that holds the key, and `proof_of_possession`: base64 of the ES256 signature, made with the leaf key, of the UTF-8 bytes `cairn-byok-registration\\n<tenant_id>\\n<lowercase hex SHA-256 of the leaf certificate DER>`. A missing or failing proof, a chain whose subject carries Cairn's own certificate names (O of Cairn's certificates, CN `Cairn Root CA`, `Cairn Intermediate CA`, `Cairn Signing …`, `Cairn OCSP Responder …`) or that Cairn's CA issued, and an endpoint at an internal address are 400 `cairn.validation.invalid_body` naming the field. Every signature the endpoint later answers is verified against the leaf before use; one that does not verify fails the sign with 503 `cairn.signer.unavailable` and nothing recorded or billed.",
    tag: 'Signing',
    auth: { kind: 'key', scope: 'admin' },
    body: {
      kind: 'json',
      schema: registerBody,
      example: {
        certificate_chain_pem: '-----BEGIN CERTIFICATE-----\n…',
        endpoint_url: 'https://keys.example.com/sign',
        proof_of_possession: 'MEUCIQ…',
      },
    },
    answers: [
      json(201, 'The credential; its HMAC secret is shown once', {
        credential_id: 'sc_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        subject: 'CN=Example Studio',
        hmac_secret: '…',
      }),
    ],
    errors: ['cairn.auth.forbidden'],
  },
  {
    method: 'get',
    path: '/v1/signing-credentials',
    operationId: 'listSigningCredentials',
    summary: 'List your signing credentials',
    tag: 'Signing',
    auth: { kind: 'key', scope: 'read' },
    answers: [json(200, 'The credentials', { credentials: [] })],
    errors: ['cairn.auth.forbidden'],
  },
  {
    method: 'delete',
    path: '/v1/signing-credentials/:credential_id',
    operationId: 'deleteSigningCredential',
    summary: 'Remove a signing credential',
    tag: 'Signing',
    auth: { kind: 'key', scope: 'admin' },
    answers: [noContent],
    errors: ['cairn.auth.forbidden', 'cairn.not_found'],
  },
  {
    method: 'post',
    path: '/v1/sign',
    operationId: 'sign',
    summary: 'Sign a file with a recipe (C2PA manifest, watermark, soft binding)',
    tag: 'Signing',
    auth: { kind: 'key', scope: 'sign' },
    headers: [IDEMPOTENCY],
    body: {
      kind: 'multipart',
      schema: fieldsSchema,
      files: { asset: 'The file to sign' },
      required: ['asset', 'recipe'],
      example: { recipe: 'photo-v1', metadata: '{"title":"Harbour at dawn"}' },
    },
    answers: [
      json(200, 'Signed (small files)', signExample, signResultSchema),
      json(
        202,
        'Accepted as a job; poll poll_url',
        {
          job_id: 'job_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
          kind: 'sign',
          status: 'queued',
          poll_url: 'https://cairn.example/v1/jobs/job_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        },
        jobSchema,
      ),
    ],
    errors: [
      'cairn.sign.missing_idempotency_key',
      'cairn.sign.idempotency_conflict',
      'cairn.idempotency.in_progress',
      'cairn.sign.invalid_recipe',
      'cairn.sign.unsupported_mime',
      'cairn.sign.file_too_large',
      'cairn.media.too_large',
      'cairn.billing.quota_exceeded',
      'cairn.billing.spending_cap_reached',
      'cairn.signer.unavailable',
      'cairn.sign.worker_failed',
      'cairn.not_found',
    ],
  },
  {
    method: 'get',
    path: '/v1/assets/:asset_id/content',
    operationId: 'downloadAsset',
    summary: 'Download a signed asset',
    tag: 'Signing',
    auth: { kind: 'key', scope: 'read' },
    answers: [{ status: 200, description: 'The signed file', contentType: 'application/octet-stream' }],
    errors: ['cairn.not_found', 'cairn.asset.expired'],
  },
  {
    method: 'get',
    path: '/v1/manifests/:manifest_id',
    operationId: 'getManifest',
    summary: 'Fetch a C2PA manifest store (public)',
    tag: 'Verification',
    auth: { kind: 'public' },
    answers: [{ status: 200, description: 'The manifest store', contentType: 'application/c2pa' }],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: '/v1/jobs/:job_id',
    operationId: 'getJob',
    summary: 'Poll a sign or verify job',
    tag: 'Jobs',
    auth: { kind: 'key', scope: 'read' },
    answers: [
      json(
        200,
        'The job',
        {
          job_id: 'job_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
          kind: 'sign',
          status: 'done',
          poll_url: 'https://cairn.example/v1/jobs/job_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
          ...signExample,
          attempts: 1,
          created_at: TIME,
          updated_at: TIME,
        },
        jobSchema,
      ),
    ],
    errors: ['cairn.not_found'],
  },
  {
    method: 'post',
    path: '/v1/verify',
    operationId: 'verify',
    summary: 'Verify a file, an asset_id or a manifest_uri (public without a key)',
    tag: 'Verification',
    auth: { kind: 'optional' },
    headers: [{ name: 'Prefer', required: false, description: 'respond-async: verify as a job (with a key)' }],
    query: verifyQuery,
    body: { kind: 'json', schema: jsonInput, example: { asset_id: ASSET } },
    answers: [
      json(200, 'The verification (a failed check is a 200 with its status)', verificationExample, verificationSchema),
      crJsonAnswer,
      json(
        202,
        'Accepted as a job (with a key, large or Prefer: respond-async)',
        { job_id: 'job_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', kind: 'verify', status: 'queued' },
        jobSchema,
      ),
    ],
    errors: [
      'cairn.verify.no_input',
      'cairn.verify.unsupported_file_type',
      'cairn.validation.body_too_large',
      'cairn.not_found',
      'cairn.auth.invalid_key',
      'cairn.auth.forbidden',
      'cairn.ratelimit.exceeded',
      'cairn.billing.quota_exceeded',
      'cairn.unavailable',
    ],
  },
  {
    method: 'get',
    path: '/v1/verify/:manifest_id',
    operationId: 'verifyManifest',
    summary: 'Verify a stored manifest by id',
    tag: 'Verification',
    auth: { kind: 'key', scope: 'read' },
    query: verifyQuery,
    answers: [json(200, 'The verification', verificationExample, verificationSchema), crJsonAnswer],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: '/v1/trust-list',
    operationId: 'getTrustList',
    summary: 'Read the trust list verification uses',
    tag: 'Verification',
    auth: { kind: 'optional' },
    answers: [
      json(200, 'The trust list', {
        entries: [
          {
            subject: 'CN=Cairn Demo CA',
            origin: 'default',
            sha256_fingerprint: 'ab12…',
            not_after: '2030-01-01T00:00:00Z',
          },
        ],
      }),
    ],
    errors: ['cairn.auth.invalid_key'],
  },
  {
    method: 'post',
    path: '/v1/trust-list',
    operationId: 'setTrustList',
    summary: 'Set a custom trust list (Enterprise)',
    tag: 'Verification',
    auth: { kind: 'key', scope: 'admin' },
    body: {
      kind: 'json',
      schema: trustListBody,
      example: { entries: [{ issuer_cn: 'Example Root CA', certificate_pem: '-----BEGIN CERTIFICATE-----\n…' }] },
    },
    answers: [json(200, 'Stored', { tenant_id: 'ten_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', count: 1, updated_at: TIME })],
    errors: ['cairn.auth.forbidden'],
  },
  {
    method: 'delete',
    path: '/v1/trust-list',
    operationId: 'clearTrustList',
    summary: 'Remove the custom trust list: verification uses the default list again',
    tag: 'Verification',
    auth: { kind: 'key', scope: 'admin' },
    answers: [noContent],
    errors: [],
  },
  {
    method: 'get',
    path: '/v1/usage',
    operationId: 'getUsage',
    summary: 'Usage and charges this period',
    tag: 'Account',
    auth: { kind: 'key', scope: 'read' },
    answers: [json(200, 'Usage', { period_start: '2025-06-01T00:00:00Z', units: { sign: 120, verify: 40 } })],
    errors: [],
  },
  {
    method: 'post',
    path: '/v1/lookup',
    operationId: 'lookup',
    summary: 'Find signed assets by file or soft-binding value',
    tag: 'Verification',
    auth: { kind: 'key', scope: 'read' },
    body: {
      kind: 'json',
      schema: bindingBody,
      example: { binding: { alg: FINGERPRINT_ALG.image, value: 'c3f0a1b2d4e5f607'.repeat(4) } },
    },
    answers: [json(200, 'Matches', { matches: [{ asset_id: ASSET, similarity: 0.97 }] })],
    errors: ['cairn.verify.no_input', 'cairn.validation.body_too_large', 'cairn.billing.quota_exceeded'],
  },
  {
    method: 'get',
    path: '/v1/audit',
    operationId: 'listAuditEntries',
    summary: 'Read your audit log (JSON pages or NDJSON)',
    tag: 'Account',
    auth: { kind: 'key', scope: 'read' },
    query: auditQuery,
    answers: [
      json(200, 'A page, newest first', {
        entries: [{ entry_id: 'ae_1', event_type: 'asset.signed', seq: 42, hash: '9f…' }],
        next_cursor: null,
      }),
      { status: 200, description: 'format=ndjson: one entry a line', contentType: 'application/x-ndjson' },
    ],
    errors: ['cairn.validation.query_too_long'],
  },
  {
    method: 'get',
    path: '/v1/audit/verify',
    operationId: 'verifyAuditChain',
    summary: 'Check the audit log hash chain',
    tag: 'Account',
    auth: { kind: 'key', scope: 'read' },
    answers: [json(200, 'The chain check', { intact: true, entries: 42 })],
    errors: [],
  },
  {
    method: 'put',
    path: '/v1/audit/export',
    operationId: 'setAuditExport',
    summary: 'Set continuous audit export (Enterprise)',
    tag: 'Account',
    auth: { kind: 'key', scope: 'admin' },
    body: {
      kind: 'json',
      schema: exportBody,
      example: { sink: 's3', bucket: 'example-audit', prefix: 'cairn/', region: 'eu-west-1' },
    },
    answers: [json(200, 'The export config', { sink: 's3', bucket: 'example-audit' })],
    errors: ['cairn.auth.forbidden'],
  },
  {
    method: 'get',
    path: '/v1/audit/export',
    operationId: 'getAuditExport',
    summary: 'Read the audit export config and progress',
    tag: 'Account',
    auth: { kind: 'key', scope: 'admin' },
    answers: [json(200, 'The export config', { sink: 's3', bucket: 'example-audit' })],
    errors: ['cairn.auth.forbidden', 'cairn.not_found'],
  },
  {
    method: 'delete',
    path: '/v1/audit/export',
    operationId: 'deleteAuditExport',
    summary: 'Stop the audit export',
    tag: 'Account',
    auth: { kind: 'key', scope: 'admin' },
    answers: [noContent],
    errors: ['cairn.auth.forbidden', 'cairn.not_found'],
  },
  {
    method: 'get',
    path: '/v1/anchors/:batchId',
    operationId: 'getAnchorBatch',
    summary: 'Read an anchor batch',
    tag: 'Anchoring',
    auth: { kind: 'key', scope: 'read' },
    answers: [json(200, 'The batch', { batch_id: 'ab_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', status: 'anchored' })],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: '/v1/anchors/:batchId/proofs/:assetId',
    operationId: 'getAnchorProof',
    summary: "An asset's inclusion proof in a batch",
    tag: 'Anchoring',
    auth: { kind: 'key', scope: 'read' },
    answers: [
      json(200, 'The inclusion proof', { batch_id: 'ab_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', asset_id: ASSET, proof: ['9f…'] }),
    ],
    errors: ['cairn.not_found'],
  },
  {
    method: 'post',
    path: '/v1/uploads',
    operationId: 'createUploadSession',
    summary: 'Open an upload session for a large file (above the direct upload limit)',
    tag: 'Signing',
    auth: { kind: 'key', scope: 'sign' },
    body: {
      kind: 'json',
      schema: createUploadBody,
      example: { filename: 'launch.mp4', size: 734003200, content_type: 'video/mp4' },
    },
    answers: [
      json(201, 'Where to PUT the file; then send upload_id to POST /v1/sign or /v1/verify instead of the file', {
        upload_id: 'up_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        upload_url:
          'https://cairn.example.com/v1/uploads/up_01JBZ3Q8M6V4W2X9Y7T5R3N1PK/content?expires=1795312345&signature=…',
        method: 'PUT',
        expires_at: '2026-11-23T23:00:00.000Z',
        max_bytes: 734003200,
      }),
    ],
    errors: ['cairn.upload.too_large'],
  },
  {
    method: 'put',
    path: '/v1/uploads/:upload_id/content',
    operationId: 'putUploadContent',
    summary: "The file of an upload session, to its signed URL (no API key: the URL's signature is the credential)",
    tag: 'Signing',
    auth: { kind: 'public' },
    query: uploadContentQuery,
    answers: [{ status: 204, description: 'Received' }],
    errors: [
      'cairn.upload.invalid_url',
      'cairn.upload.too_large',
      'cairn.upload.already_uploaded',
      'cairn.verify.unsupported_file_type',
    ],
  },
  {
    method: 'post',
    path: '/v1/webhooks',
    operationId: 'createWebhook',
    summary: 'Register a webhook endpoint',
    tag: 'Webhooks',
    auth: { kind: 'key', scope: 'admin' },
    body: {
      kind: 'json',
      schema: webhookBody,
      example: { url: 'https://hooks.example.com/cairn', events: ['job.completed'] },
    },
    answers: [
      json(201, 'The webhook; its signing secret is shown once', {
        webhook_id: 'wh_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        url: 'https://hooks.example.com/cairn',
        secret: 'whsec_…',
      }),
    ],
    errors: ['cairn.webhook.invalid_url', 'cairn.webhook.unknown_event'],
  },
  {
    method: 'get',
    path: '/v1/webhooks',
    operationId: 'listWebhooks',
    summary: 'List webhooks',
    tag: 'Webhooks',
    auth: { kind: 'key', scope: 'read' },
    query: webhookListQuery,
    answers: [json(200, 'The webhooks', { webhooks: [] })],
    errors: [],
  },
  {
    method: 'get',
    path: '/v1/webhooks/:webhook_id',
    operationId: 'getWebhook',
    summary: 'Read a webhook',
    tag: 'Webhooks',
    auth: { kind: 'key', scope: 'read' },
    answers: [
      json(200, 'The webhook', { webhook_id: 'wh_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', url: 'https://hooks.example.com/cairn' }),
    ],
    errors: ['cairn.not_found'],
  },
  {
    method: 'delete',
    path: '/v1/webhooks/:webhook_id',
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook',
    tag: 'Webhooks',
    auth: { kind: 'key', scope: 'admin' },
    answers: [noContent],
    errors: ['cairn.not_found'],
  },
  {
    method: 'post',
    path: '/v1/webhooks/:webhook_id/rotate-secret',
    operationId: 'rotateWebhookSecret',
    summary: "Rotate a webhook's signing secret (the replaced one keeps signing for overlap_seconds, default 0)",
    tag: 'Webhooks',
    auth: { kind: 'key', scope: 'admin' },
    body: { kind: 'json', schema: webhookRotateBody, example: { overlap_seconds: 3600 } },
    answers: [
      json(200, 'The new secret, shown once', {
        webhook_id: 'wh_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        secret: 'whsec_…',
        previous_secret_expires_at: TIME,
      }),
    ],
    errors: ['cairn.not_found', 'cairn.validation.invalid_body'],
  },
  {
    method: 'get',
    path: '/v1/webhooks/:webhook_id/deliveries',
    operationId: 'listWebhookDeliveries',
    summary: "A webhook's recent deliveries",
    tag: 'Webhooks',
    auth: { kind: 'key', scope: 'read' },
    query: deliveriesQuery,
    answers: [json(200, 'The deliveries', { deliveries: [] })],
    errors: ['cairn.not_found'],
  },
  {
    method: 'post',
    path: '/v1/webhooks/:webhook_id/deliveries/:delivery_id/redeliver',
    operationId: 'redeliverWebhook',
    summary: 'Send a delivery again',
    tag: 'Webhooks',
    auth: { kind: 'key', scope: 'admin' },
    answers: [json(202, 'Queued', { delivery_id: 'whd_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', status: 'pending' })],
    errors: ['cairn.not_found'],
  },
  // The C2PA Soft Binding Resolution API: queries, manifests and receipts public (per-address limits); the store
  // routes (manifests, bindings) need a key of scope sign.
  {
    method: 'get',
    path: `${C2PA}/matches/byBinding`,
    operationId: 'c2paMatchesByBinding',
    summary: 'Soft-binding matches by algorithm and value',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    query: byBindingQuery,
    answers: [json(200, 'Matches', { matches: [{ manifestId: MANIFEST }] })],
    errors: ['cairn.validation.query_too_long', 'cairn.ratelimit.exceeded'],
  },
  {
    method: 'post',
    path: `${C2PA}/matches/byBinding`,
    operationId: 'c2paMatchesByBindingPost',
    summary: 'Soft-binding matches by value (long values in the body)',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    query: byBindingPostQuery,
    body: { kind: 'json', schema: byBindingBody, example: { alg: WATERMARK_ALG.syncV2, value: 'AAECAwQFBgc=' } },
    answers: [json(200, 'Matches', { matches: [{ manifestId: MANIFEST }] })],
    errors: ['cairn.ratelimit.exceeded'],
  },
  {
    method: 'post',
    path: `${C2PA}/matches/byContent`,
    operationId: 'c2paMatchesByContent',
    summary: 'Soft-binding matches for an uploaded file',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    query: byContentQuery,
    body: {
      kind: 'multipart',
      files: { file: 'The file to look up (or send it as the raw body)' },
      required: ['file'],
    },
    answers: [json(200, 'Matches', { matches: [{ manifestId: MANIFEST, similarityScore: 97 }] })],
    errors: [
      'cairn.verify.unsupported_file_type',
      'cairn.validation.body_too_large',
      'cairn.ratelimit.exceeded',
      'cairn.unavailable',
    ],
  },
  {
    method: 'post',
    path: `${C2PA}/matches/byReference`,
    operationId: 'c2paMatchesByReference',
    summary: 'Soft-binding matches for an asset fetched from a URL',
    description:
      'Cairn fetches referenceUrl under its outbound address policy (private, link-local and metadata addresses refused, checked after DNS and on every redirect, at most 3 redirects), at most assetLength bytes (≤ UPLOAD_MAX_BYTES) within REFERENCE_FETCH_TIMEOUT_MS, then answers as byContent. A failed fetch is 502 naming only the class of failure.',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    query: byContentQuery,
    body: {
      kind: 'json',
      schema: byReferenceBody,
      example: { referenceUrl: 'https://images.example.com/photo.jpg', assetLength: 245_760, assetType: 'image/jpeg' },
    },
    answers: [json(200, 'Matches', { matches: [{ manifestId: MANIFEST, similarityScore: 97 }] })],
    errors: [
      'cairn.resolution.fetch_failed',
      'cairn.verify.unsupported_file_type',
      'cairn.validation.body_too_large',
      'cairn.ratelimit.exceeded',
    ],
  },
  {
    method: 'post',
    path: `${C2PA}/manifests`,
    operationId: 'c2paStoreManifest',
    summary: 'Store a C2PA manifest store in the repository',
    description:
      "The body is the manifest store (JUMBF, Content-Type: application/c2pa), at most STORED_MANIFEST_MAX_BYTES. Its structure is checked (a c2pa superbox of manifests with claims and signatures); its signature is not Cairn's and is not checked. The values of its c2pa.soft-binding assertions are bound to it. Answers the stored manifest id (sm_…) and, with returnReceipt=true, the repository receipt Cairn signed. Stored manifests are never consulted by verify.",
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'key', scope: 'sign' },
    query: storeManifestQuery,
    answers: [
      json(200, 'Stored', {
        manifestId: 'sm_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        receipt: { '@type': 'org.c2pa.manifest-receipt', repository: { manifestId: 'sm_01JBZ3Q8M6V4W2X9Y7T5R3N1PK' } },
      }),
    ],
    errors: [
      'cairn.validation.body_too_large',
      'cairn.validation.unsupported_media_type',
      'cairn.resolution.quota_exceeded',
    ],
  },
  {
    method: 'delete',
    path: `${C2PA}/manifests/:manifestId`,
    operationId: 'c2paDeleteManifest',
    summary: 'Delete a stored manifest with its bindings and receipt (owner only)',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'key', scope: 'sign' },
    answers: [{ status: 204, description: 'Deleted' }],
    errors: ['cairn.not_found'],
  },
  {
    method: 'post',
    path: `${C2PA}/bindings`,
    operationId: 'c2paCreateBinding',
    summary: 'Bind a soft-binding value to one of your stored manifests',
    description:
      "alg is optional (Cairn's addition to the spec's body): a value bound without one is found by a byBinding query naming any algorithm. A value you already bound to another manifest is 409; PUT moves it.",
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'key', scope: 'sign' },
    body: {
      kind: 'json',
      schema: c2paBindingBody,
      example: { bindingValue: 'AAECAwQFBgc=', manifestId: 'sm_01JBZ3Q8M6V4W2X9Y7T5R3N1PK' },
    },
    answers: [{ status: 204, description: 'Bound' }],
    errors: ['cairn.not_found', 'cairn.resolution.binding_exists'],
  },
  {
    method: 'put',
    path: `${C2PA}/bindings`,
    operationId: 'c2paUpdateBinding',
    summary: 'Move one of your bindings to another of your stored manifests',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'key', scope: 'sign' },
    body: {
      kind: 'json',
      schema: c2paBindingBody,
      example: { bindingValue: 'AAECAwQFBgc=', manifestId: 'sm_01JBZ3Q8M6V4W2X9Y7T5R3N1PK' },
    },
    answers: [{ status: 204, description: 'Moved' }],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: `${C2PA}/manifests/:manifestId/receipts`,
    operationId: 'c2paGetReceipt',
    summary: "A stored manifest's repository receipt, verified now",
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    answers: [
      json(200, 'The receipt with verified', {
        '@type': 'org.c2pa.manifest-receipt',
        repository: { uri: 'https://cairn.example/c2pa/v1', manifestId: 'sm_01JBZ3Q8M6V4W2X9Y7T5R3N1PK' },
        verified: true,
      }),
    ],
    errors: ['cairn.not_found'],
  },
  {
    method: 'post',
    path: `${C2PA}/manifests/:manifestId/receipts`,
    operationId: 'c2paVerifyReceipt',
    summary: 'Verify a receipt against a stored manifest',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    body: {
      kind: 'json',
      schema: verifyReceiptBody,
      example: { '@type': 'org.c2pa.manifest-receipt', repository: { manifestId: 'sm_01JBZ3Q8M6V4W2X9Y7T5R3N1PK' } },
    },
    answers: [json(200, 'The receipt with verified (and error when false)', { verified: true })],
    errors: ['cairn.not_found', 'cairn.validation.unsupported_media_type'],
  },
  {
    method: 'get',
    path: `${C2PA}/manifests/:manifestId`,
    operationId: 'c2paGetManifest',
    summary: 'A manifest store by id',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    query: manifestQuery,
    answers: [{ status: 200, description: 'The manifest store', contentType: 'application/c2pa' }],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: `${C2PA}/services/capabilities`,
    operationId: 'c2paCapabilities',
    summary: 'What this resolution service supports',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    answers: [
      json(200, 'Capabilities', { c2paSpecificationVersion: '2.4.0', supportedCapabilities: SUPPORTED_CAPABILITIES }),
    ],
    errors: [],
  },
  {
    method: 'get',
    path: `${C2PA}/services/status`,
    operationId: 'c2paStatus',
    summary: 'Service status',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    answers: [json(200, 'Up', { status: 'ok' })],
    errors: ['cairn.unavailable'],
  },
  {
    method: 'get',
    path: `${C2PA}/services/supportedAlgorithms`,
    operationId: 'c2paSupportedAlgorithms',
    summary: 'Soft-binding algorithms served',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    answers: [
      json(200, 'Algorithms', {
        watermarks: IMAGE_WATERMARK_ALGS.map((alg) => ({ alg })),
        fingerprints: [{ alg: FINGERPRINT_ALG.image }],
      }),
    ],
    errors: [],
  },
  {
    method: 'get',
    path: C2PA_DISCOVERY_PATH,
    operationId: 'c2paDiscovery',
    summary: 'Where the resolution API is (well-known discovery)',
    tag: 'C2PA Soft Binding Resolution',
    auth: { kind: 'public' },
    answers: [json(200, 'Discovery', { endpoints: [`https://cairn.example${C2PA}`] })],
    errors: [],
  },
  // Pages for people.
  {
    method: 'get',
    path: '/v/:asset_id',
    operationId: 'assetPage',
    summary: "A signed asset's public provenance page",
    tag: 'Pages',
    auth: { kind: 'public' },
    answers: [html('The page; the verdict in data-status')],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: '/v/:asset_id/thumbnail.jpg',
    operationId: 'assetThumbnail',
    summary: "A signed asset's thumbnail",
    tag: 'Pages',
    auth: { kind: 'public' },
    answers: [{ status: 200, description: 'A JPEG, at most 320 px a side (images only)', contentType: 'image/jpeg' }],
    errors: ['cairn.not_found'],
  },
  {
    method: 'get',
    path: '/verify',
    operationId: 'verifyPage',
    summary: 'The public verify page: drop a file',
    tag: 'Pages',
    auth: { kind: 'public' },
    answers: [html('The form')],
    errors: [],
  },
  {
    method: 'post',
    path: '/verify',
    operationId: 'verifyPageSubmit',
    summary: 'The verify page form post',
    tag: 'Pages',
    auth: { kind: 'public' },
    body: { kind: 'multipart', files: { file: 'The file to verify' }, required: ['file'] },
    answers: [html('The verdict page')],
    errors: [
      'cairn.verify.no_input',
      'cairn.validation.body_too_large',
      'cairn.validation.unsupported_media_type',
      'cairn.ratelimit.exceeded',
    ],
  },
  {
    method: 'get',
    path: '/docs/api/errors',
    operationId: 'errorCatalogue',
    summary: 'The error catalogue (every problem type URL lands here)',
    tag: 'Docs',
    auth: { kind: 'public' },
    answers: [html('One anchor per cairn.* code')],
    errors: [],
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'openApiDocument',
    summary: 'This OpenAPI 3.1 document',
    tag: 'Docs',
    auth: { kind: 'public' },
    answers: [json(200, 'The document', { openapi: '3.1.0' })],
    errors: [],
  },
  {
    method: 'get',
    path: '/docs',
    operationId: 'apiReference',
    summary: 'The API reference rendered from this document',
    tag: 'Docs',
    auth: { kind: 'public' },
    answers: [html('The reference page')],
    errors: [],
  },
  {
    method: 'get',
    path: '/docs/internal',
    operationId: 'internalApiReference',
    summary: 'The internal gRPC API reference (for teams calling the services)',
    tag: 'Docs',
    auth: { kind: 'public' },
    answers: [html('The reference page')],
    errors: [],
  },
];

/** Paths served that are not operations: static files of the pages above. */
export const STATIC_PATHS: readonly string[] = ['/verify/drop.js', '/docs/assets/:file'];
