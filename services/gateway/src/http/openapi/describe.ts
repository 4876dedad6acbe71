import type { z } from 'zod';
import type { ErrorCode } from '@cairn/errors';
import { jsonObject } from './responses.js';

/**
 * What a route module writes to describe the operations it serves (its `operations` export), and the pieces
 * several modules share. document.ts renders these; test/openapi.test.ts checks they cover the routes.
 */
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

export type Scope = 'read' | 'verify' | 'sign' | 'admin';

/** 'key': needs an API key with this scope; 'optional': a key changes what happens; 'public'. */
export type AuthDoc = { kind: 'key'; scope: Scope } | { kind: 'optional' } | { kind: 'public' };

export interface OperationDoc {
  method: HttpMethod;
  /** The Express path, e.g. /v1/jobs/:job_id. */
  path: string;
  operationId: string;
  summary: string;
  /** What the summary cannot say: the rules a client must know to call it right. */
  description?: string;
  tag: string;
  auth: AuthDoc;
  query?: z.ZodType;
  body?: RequestBodyDoc;
  /** Headers the operation reads, beyond Authorization. */
  headers?: Array<{ name: string; required: boolean; description: string }>;
  answers: AnswerDoc[];
  /** The cairn.* problems this operation can answer, beyond those every keyed or body-taking operation can. */
  errors: ErrorCode[];
}

/**
 * One operation as its route module writes it, keyed by operationId: method and path in one `route` string (as
 * Express registers it); the module's tag and auth unless it names its own; no errors unless it lists some.
 */
export type OperationSpec = Omit<OperationDoc, 'method' | 'path' | 'operationId' | 'tag' | 'auth' | 'errors'> & {
  route: `${HttpMethod} ${string}`;
  tag?: string;
  auth?: AuthDoc;
  errors?: ErrorCode[];
};

/**
 * A route module's operations (its `operations` export), all under `tag`; with `auth`, that of every operation
 * that does not name its own, else each names its own.
 */
export function operationsOf(tag: string, auth: AuthDoc, specs: Record<string, OperationSpec>): OperationDoc[];
export function operationsOf(tag: string, specs: Record<string, OperationSpec & { auth: AuthDoc }>): OperationDoc[];
export function operationsOf(
  tag: string,
  authOrSpecs: AuthDoc | Record<string, OperationSpec>,
  maybeSpecs?: Record<string, OperationSpec>,
): OperationDoc[] {
  const [moduleAuth, specs] = maybeSpecs
    ? [authOrSpecs as AuthDoc, maybeSpecs]
    : [undefined, authOrSpecs as Record<string, OperationSpec>];
  return Object.entries(specs).map(([operationId, { route, tag: own, auth, errors, ...rest }]) => {
    const [method, path] = route.split(' ') as [HttpMethod, string];
    // The overloads make one of the two present.
    const known = (auth ?? moduleAuth)!;
    return { method, path, operationId, tag: own ?? tag, auth: known, ...rest, errors: errors ?? [] };
  });
}

export const PUBLIC: AuthDoc = { kind: 'public' };
/** Public, but a key makes the call the tenant's (its limits, its jobs). */
export const KEY_OPTIONAL: AuthDoc = { kind: 'optional' };
export const needsKey = (scope: Scope): AuthDoc => ({ kind: 'key', scope });

/** A JSON request body: the schema its route validates with and an example that passes it. */
export const jsonRequest = (schema: z.ZodType, example: unknown): RequestBodyDoc => ({ kind: 'json', schema, example });

/** A JSON answer; without a schema of its own, any JSON object. */
export function json(status: number, description: string, example: unknown, schema: z.ZodType = jsonObject): AnswerDoc {
  return { status, description, schema, example };
}
/** An answer with no body. */
export const empty = (description: string): AnswerDoc => ({ status: 204, description });
export const noContent = empty('Done; no body');
export const htmlPage = (description: string): AnswerDoc => ({ status: 200, description, contentType: 'text/html' });
/** A 200 whose body is not JSON: bytes of `contentType` (a file, a manifest store, NDJSON lines). */
export const bytes = (description: string, contentType: string): AnswerDoc => ({
  status: 200,
  description,
  contentType,
});

/** The one error code most lookups by id add. */
export const NOT_FOUND: ErrorCode[] = ['cairn.not_found'];

export const IDEMPOTENCY = {
  name: 'Idempotency-Key',
  required: true,
  description:
    '8 to 255 visible ASCII characters (a UUID is best); a retry with the same key never does the work twice',
};

/** Example values the documents of several modules share, so one asset reads the same throughout. */
export const EXAMPLE = {
  asset: 'ast_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
  manifest: 'urn:c2pa:3f2a9c1e-6b7d-4e8f-9a0b-1c2d3e4f5a6b',
  job: 'job_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
  tenant: 'ten_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
  time: '2025-06-01T12:00:00Z',
} as const;

/** A Sign result (POST /v1/sign, and a done sign job carries the same fields). */
export const SIGN_RESULT_EXAMPLE = {
  asset_id: EXAMPLE.asset,
  manifest_id: EXAMPLE.manifest,
  manifest_uri: `https://cairn.example/v1/manifests/${EXAMPLE.manifest}`,
  verifier_url: `https://cairn.example/v/${EXAMPLE.asset}`,
  asset_url: `https://cairn.example/v1/assets/${EXAMPLE.asset}/content`,
  media_type: 'image/jpeg',
  created_at: EXAMPLE.time,
  expires_at: '2025-07-01T12:00:00Z',
};
