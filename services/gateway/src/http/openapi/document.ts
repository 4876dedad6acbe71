import { z } from 'zod';
import { ERROR_CATALOG, type ErrorCode } from '@cairn/errors';
import { components } from './responses.js';
import type { OperationDoc } from './describe.js';
import { OPERATIONS } from './operations.js';

type JsonSchema = Record<string, unknown>;
type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, JsonSchema>> };

const COMPONENT_URI = (id: string): string => `#/components/schemas/${id}`;

/** JSON Schema for one zod schema; requests are described as the client sends them (before defaults/transforms). */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const id = components.get(schema)?.id;
  if (id) return { $ref: COMPONENT_URI(id) };
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as JsonSchema;
  return rest;
}

/** Express `/v1/jobs/:job_id` → OpenAPI `/v1/jobs/{job_id}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

/** The problems an operation can answer: its own plus those its shape implies (keys, bodies, any request). */
export function errorCodesOf(op: OperationDoc): ErrorCode[] {
  const codes = new Set<ErrorCode>(op.errors);
  if (op.auth.kind === 'key')
    ['cairn.auth.invalid_key', 'cairn.auth.forbidden', 'cairn.ratelimit.exceeded'].forEach((c) =>
      codes.add(c as ErrorCode),
    );
  if (op.body || op.query) codes.add('cairn.validation.invalid_body');
  if (op.body?.kind === 'json') codes.add('cairn.validation.unsupported_media_type');
  if (op.body?.kind === 'multipart') codes.add('cairn.validation.body_too_large');
  codes.add('cairn.internal_error');
  return [...codes];
}

function queryParameters(schema: z.ZodType): JsonSchema[] {
  const object = jsonSchema(schema, 'input');
  const properties = (object.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((object.required ?? []) as string[]);
  return Object.entries(properties).map(([name, s]) => ({
    name,
    in: 'query',
    required: required.has(name),
    schema: s,
  }));
}

function requestBody(op: OperationDoc): JsonSchema | undefined {
  const body = op.body;
  if (!body) return undefined;
  if (body.kind === 'json')
    return {
      required: true,
      content: { 'application/json': { schema: jsonSchema(body.schema, 'input'), example: body.example } },
    };
  const fields = body.schema ? jsonSchema(body.schema, 'input') : { type: 'object', properties: {} };
  const properties = { ...((fields.properties ?? {}) as Record<string, JsonSchema>) };
  for (const [name, description] of Object.entries(body.files))
    properties[name] = { type: 'string', contentMediaType: 'application/octet-stream', description };
  return {
    required: true,
    content: {
      'multipart/form-data': {
        schema: { ...fields, type: 'object', properties, required: body.required },
        ...(body.example ? { example: body.example } : {}),
      },
    },
  };
}

function problemAnswers(codes: ErrorCode[]): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes)
    byStatus.set(ERROR_CATALOG[code].status, [...(byStatus.get(ERROR_CATALOG[code].status) ?? []), code]);
  const answers: Record<string, JsonSchema> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    answers[String(status)] = {
      description: list.map((c) => `${c}: ${ERROR_CATALOG[c].title}`).join('; '),
      content: {
        'application/problem+json': {
          schema: { $ref: COMPONENT_URI('Problem') },
          examples: Object.fromEntries(
            list.map((code) => [
              code,
              {
                value: {
                  type: `https://cairn.example/docs/api/errors#${code}`,
                  title: ERROR_CATALOG[code].title,
                  status,
                  detail: ERROR_CATALOG[code].title,
                  code,
                  request_id: 'req_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
                },
              },
            ]),
          ),
        },
      },
    };
  }
  return answers;
}

function operation(op: OperationDoc): JsonSchema {
  const codes = errorCodesOf(op);
  const pathParams = [...op.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => ({
    name: m[1],
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const headers = (op.headers ?? []).map((h) => ({
    name: h.name,
    in: 'header',
    required: h.required,
    description: h.description,
    schema: { type: 'string' },
  }));
  const answers: Record<string, JsonSchema> = {};
  for (const answer of op.answers) {
    const key = String(answer.status);
    const contentType = answer.contentType ?? 'application/json';
    const media: JsonSchema = answer.schema
      ? { schema: jsonSchema(answer.schema, 'output') }
      : contentType === 'application/json'
        ? { schema: { type: 'object' } }
        : {};
    if (answer.example !== undefined) media.example = answer.example;
    const existing = answers[key];
    // Two answers with one status (JSON or NDJSON pages) share the status entry, one media type each.
    answers[key] = existing
      ? {
          ...existing,
          description: `${String(existing.description)}; ${answer.description}`,
          content: { ...(existing.content as JsonSchema), [contentType]: media },
        }
      : { description: answer.description, ...(answer.status === 204 ? {} : { content: { [contentType]: media } }) };
  }
  return {
    operationId: op.operationId,
    summary: op.summary,
    tags: [op.tag],
    security: op.auth.kind === 'key' ? [{ apiKey: [] }] : op.auth.kind === 'optional' ? [{}, { apiKey: [] }] : [],
    ...(op.description || op.auth.kind === 'key'
      ? {
          description: [
            op.description,
            op.auth.kind === 'key' ? `Needs an API key with the \`${op.auth.scope}\` scope (or admin).` : undefined,
          ]
            .filter(Boolean)
            .join('\n\n'),
        }
      : {}),
    parameters: [...pathParams, ...headers, ...(op.query ? queryParameters(op.query) : [])],
    ...(op.body ? { requestBody: requestBody(op) } : {}),
    responses: { ...answers, ...problemAnswers(codes) },
    'x-cairn-error-codes': codes,
  };
}

/** The OpenAPI 3.1 document: built once per process from the route modules' operations and schemas. */
export function buildOpenApiDocument(options: { serverUrl: string; version: string }): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  for (const op of OPERATIONS) (paths[openApiPath(op.path)] ??= {})[op.method] = operation(op);
  const { schemas } = z.toJSONSchema(components, {
    uri: COMPONENT_URI,
    io: 'output',
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as { schemas: Record<string, JsonSchema> };
  for (const s of Object.values(schemas)) delete s.$id;
  for (const s of Object.values(schemas)) delete s.$schema;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cairn provenance API',
      version: options.version,
      description:
        'C2PA signing, watermarking, soft binding, anchoring and verification. Errors are RFC 7807 problems; every code is explained at /docs/api/errors.',
    },
    servers: [{ url: options.serverUrl }],
    security: [],
    tags: [...new Set(OPERATIONS.map((o) => o.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas,
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API key>' } },
    },
  };
}
