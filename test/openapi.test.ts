import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { launchChromium, watchedPage } from './support/browser.js';
import { createApp, type GatewayDeps } from '../services/gateway/src/http/app.js';
import { OPERATIONS, STATIC_PATHS, type OperationDoc } from '../services/gateway/src/http/openapi/operations.js';
import { openApiPath } from '../services/gateway/src/http/openapi/document.js';
import { jobSchema, problemSchema, verificationSchema } from '../services/gateway/src/http/openapi/responses.js';
import { startStack, type Stack } from './support/stack.js';

type Schema = NonNullable<OperationDoc['query']>;
type Express = ReturnType<typeof createApp>;
/** A zod schema (the test root has no zod of its own to `instanceof` against). */
const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && '_zod' in value && 'safeParse' in value;

const OUT = new URL('../tools/out/', import.meta.url);
// Every route module, found on disk: a new one cannot escape the schema check by not being listed here.
const ROUTES_DIR = new URL('../services/gateway/src/http/routes/', import.meta.url);
const ROUTE_MODULES: Record<string, Record<string, unknown>> = Object.fromEntries(
  await Promise.all(
    readdirSync(ROUTES_DIR)
      .filter((file) => file.endsWith('.ts'))
      .map(
        async (file) =>
          [
            file.replace(/\.ts$/, ''),
            (await import(new URL(file, ROUTES_DIR).href)) as Record<string, unknown>,
          ] as const,
      ),
  ),
);

/** The parts of buf's JSON FileDescriptorSet the reference check reads. */
interface ProtoLocation {
  path?: number[];
  leadingComments?: string;
}
interface ProtoField {
  name: string;
  oneofIndex?: number;
  proto3Optional?: boolean;
}
interface ProtoEnum {
  name: string;
  value?: Array<{ name: string }>;
}
interface ProtoMessage {
  name: string;
  options?: { mapEntry?: boolean };
  field?: ProtoField[];
  nestedType?: ProtoMessage[];
  enumType?: ProtoEnum[];
  oneofDecl?: Array<{ name: string }>;
}
interface ProtoFile {
  name: string;
  package: string;
  messageType?: ProtoMessage[];
  enumType?: ProtoEnum[];
  service?: Array<{ name: string; method?: Array<{ name: string }> }>;
  sourceCodeInfo?: { location?: ProtoLocation[] };
}

/** proto/cairn's .proto files, relative to proto/ (as buf names them). */
function protoFilesOnDisk(): string[] {
  const root = new URL('../proto/', import.meta.url);
  return (readdirSync(new URL('cairn/', root), { recursive: true }) as string[])
    .filter((file) => file.endsWith('.proto'))
    .map((file) => `cairn/${file}`)
    .sort();
}

const escapeHtml = (value: string): string =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** Every element of a file that buf's COMMENT_* rules cover, with its leading comment as the page prints it. */
function documentedElements(file: ProtoFile): Array<{ name: string; comment: string }> {
  const comments = new Map(
    (file.sourceCodeInfo?.location ?? []).map((l) => [
      (l.path ?? []).join('.'),
      (l.leadingComments ?? '').trim().replace(/\n\s*/g, ' '),
    ]),
  );
  const out: Array<{ name: string; comment: string }> = [];
  const add = (name: string, path: number[]) => out.push({ name, comment: comments.get(path.join('.')) ?? '' });
  const enumOf = (e: ProtoEnum, path: number[], name: string) => {
    add(name, path);
    (e.value ?? []).forEach((v, i) => add(`${name}.${v.name}`, [...path, 2, i]));
  };
  const messageOf = (m: ProtoMessage, path: number[], name: string) => {
    add(name, path);
    (m.field ?? []).forEach((f, i) => add(`${name}.${f.name}`, [...path, 2, i]));
    (m.oneofDecl ?? []).forEach((o, i) => {
      // A proto3 `optional` field's synthetic oneof is not an element anyone writes.
      if ((m.field ?? []).some((f) => f.oneofIndex === i && !f.proto3Optional))
        add(`${name}.${o.name}`, [...path, 8, i]);
    });
    // A map field's entry message is made by protoc, not written: the field's own comment covers it.
    (m.nestedType ?? []).forEach((n, i) => {
      if (!n.options?.mapEntry) messageOf(n, [...path, 3, i], `${name}.${n.name}`);
    });
    (m.enumType ?? []).forEach((e, i) => enumOf(e, [...path, 4, i], `${name}.${e.name}`));
  };
  (file.messageType ?? []).forEach((m, i) => messageOf(m, [4, i], `${file.package}.${m.name}`));
  (file.enumType ?? []).forEach((e, i) => enumOf(e, [5, i], `${file.package}.${e.name}`));
  (file.service ?? []).forEach((s, i) => {
    add(`${file.package}.${s.name}`, [6, i]);
    (s.method ?? []).forEach((m, j) => add(`${file.package}.${s.name}.${m.name}`, [6, i, 2, j]));
  });
  return out;
}

interface Layer {
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
}

/** Every method + path the gateway's Express app routes, walking its routers (all mounted at the root). */
function servedRoutes(app: Express): string[] {
  const found: string[] = [];
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const path of [layer.route.path].flat())
          for (const method of Object.keys(layer.route.methods)) found.push(`${method} ${path}`);
      } else if (layer.handle.stack) walk(layer.handle.stack);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return [...new Set(found)];
}

type OpenApi = {
  openapi: string;
  paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        summary: string;
        responses: Record<string, { content?: Record<string, { example?: unknown; examples?: unknown }> }>;
        requestBody?: { content: Record<string, { example?: unknown }> };
        'x-cairn-error-codes': string[];
      }
    >
  >;
};

let stack: Stack;
let doc: OpenApi;
let browser: Browser | undefined;

beforeAll(async () => {
  stack = await startStack(['gateway']);
  const res = await stack.request('/openapi.json');
  expect(res.status).toBe(200);
  doc = (await res.json()) as OpenApi;
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe('GET /openapi.json', () => {
  it('describes every route the gateway serves', () => {
    // Routing only: no dependency is called while the routers are assembled, so none is given.
    const app = createApp({
      logger: { child: () => ({}) },
      publicBaseUrl: 'http://127.0.0.1',
      trustProxy: 'loopback',
      uploadMaxBytes: 1,
      publicVerifyMaxBytes: 1,
      syncSignMaxBytes: 1,
      syncVerifyMaxBytes: 1,
    } as unknown as GatewayDeps);
    expect(servedRoutes(app)).toEqual(expect.arrayContaining(['post /v1/sign', 'get /v1/jobs/:job_id', 'get /docs']));
    const documented = new Set(OPERATIONS.map((o) => `${o.method} ${o.path}`));
    const missing = servedRoutes(app).filter(
      (r) => !documented.has(r) && !STATIC_PATHS.includes(r.slice(r.indexOf(' ') + 1)),
    );
    expect(missing).toEqual([]);
    // ...and documents nothing it does not serve.
    const served = new Set(servedRoutes(app));
    expect(OPERATIONS.map((o) => `${o.method} ${o.path}`).filter((r) => !served.has(r))).toEqual([]);
  });

  it('documents each request with the very schema its route validates with', () => {
    const exported = Object.entries(ROUTE_MODULES).flatMap(([module, exports]) =>
      Object.entries(exports)
        .filter(([, v]) => isSchema(v))
        .map(([name, schema]) => ({ name: `${module}.${name}`, schema: schema as Schema })),
    );
    const documented = new Set<Schema>(
      OPERATIONS.flatMap((o) => [o.query, o.body?.schema].filter((s): s is Schema => s !== undefined)),
    );
    expect(exported.length).toBeGreaterThanOrEqual(20);
    // A schema a route module exports for validation but the document never names is drift.
    expect(exported.filter((e) => !documented.has(e.schema)).map((e) => e.name)).toEqual([]);
    // A documented schema that is not one the routes export is a twin.
    const exportedSet = new Set(exported.map((e) => e.schema));
    expect(
      OPERATIONS.filter((o) => [o.query, o.body?.schema].some((s) => s !== undefined && !exportedSet.has(s))).map(
        (o) => o.operationId,
      ),
    ).toEqual([]);
  });

  it('gives every operation an operationId, a summary, examples and its cairn.* error codes', () => {
    expect(doc.openapi).toBe('3.1.0');
    const ids = new Set<string>();
    for (const op of OPERATIONS) {
      const served = doc.paths[openApiPath(op.path)]?.[op.method];
      expect(served?.operationId).toBe(op.operationId);
      ids.add(op.operationId);
      expect(served!.summary.length).toBeGreaterThan(0);
      expect(served!['x-cairn-error-codes']).toContain('cairn.internal_error');
      for (const code of served!['x-cairn-error-codes']) expect(code).toMatch(/^cairn\.[a-z_.]+$/);
      if (served!.requestBody?.content['application/json'])
        expect(served!.requestBody.content['application/json'].example).toBeDefined();
      const jsonAnswers = Object.entries(served!.responses)
        .filter(([status]) => Number(status) < 400)
        .flatMap(([, r]) => Object.entries(r.content ?? {}))
        .filter(([type]) => type === 'application/json');
      for (const [, media] of jsonAnswers) expect(media.example).toBeDefined();
      const problemAnswers = Object.entries(served!.responses).filter(([status]) => Number(status) >= 400);
      expect(problemAnswers.length).toBeGreaterThan(0);
      for (const [, r] of problemAnswers)
        expect(Object.keys(r.content!['application/problem+json']!.examples as object).length).toBeGreaterThan(0);
    }
    expect(ids.size).toBe(OPERATIONS.length);
  });

  it('the request examples pass the validators they document', () => {
    for (const op of OPERATIONS) {
      if (op.body?.kind === 'json')
        expect({ op: op.operationId, ok: op.body.schema.safeParse(op.body.example).success }).toEqual({
          op: op.operationId,
          ok: true,
        });
    }
    const signOp = OPERATIONS.find((o) => o.operationId === 'sign')!;
    expect(signOp.body?.kind === 'multipart' && signOp.body.schema!.safeParse(signOp.body.example).success).toBe(true);
  });

  it('a problem the gateway answers has the documented shape and a documented code', async () => {
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ asset_id: 'a', unexpected: 1 }),
    });
    expect(res.status).toBe(400);
    const problem = problemSchema.parse(await res.json());
    expect(doc.paths['/v1/verify']!.post!['x-cairn-error-codes']).toContain(problem.code);
    // The documented Job and Verification result are the shapes the SDK reads: the schema knows their fields.
    expect(Object.keys(jobSchema.shape)).toEqual(expect.arrayContaining(['job_id', 'status', 'poll_url']));
    expect(Object.keys(verificationSchema.shape)).toEqual(
      expect.arrayContaining(['status', 'proves', 'does_not_prove']),
    );
  });
});

describe('GET /docs', () => {
  it('renders the operations in Chromium from assets the gateway serves', async () => {
    browser = await launchChromium();
    const { page, errors } = await watchedPage(browser, { viewport: { width: 1200, height: 1600 } });
    const foreign: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(stack.baseUrl) && !r.url().startsWith('data:')) foreign.push(r.url());
    });
    const res = await page.goto(`${stack.baseUrl}/docs`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
    // One block per operation, each showing its operationId.
    expect(await page.locator('.opblock').count()).toBe(OPERATIONS.length);
    await page.locator('.opblock', { hasText: 'sign' }).locator('[data-path="/v1/sign"]').first().waitFor();
    const shownIds = await page.locator('.opblock .opblock-summary-operation-id').allTextContents();
    expect(shownIds.sort()).toEqual(OPERATIONS.map((o) => o.operationId).sort());
    await mkdir(OUT, { recursive: true });
    await page.screenshot({ path: new URL('docs-page.png', OUT).pathname, fullPage: false });
    expect(errors).toEqual([]);
    expect(foreign).toEqual([]);
  }, 90_000);

  it('/docs/internal publishes the gRPC reference with how to get credentials', async () => {
    const res = await stack.request('/docs/internal');
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('cairn.signer.v1.SignerService');
    expect(html).toContain('Getting credentials');
  });

  it('/docs/internal lists every service of proto/cairn and shows every doc comment the protos carry', async () => {
    const html = await (await stack.request('/docs/internal')).text();
    // Built afresh from the sources (not from what pnpm gen wrote): a page generated from stale protos fails too.
    const built = JSON.parse(
      execFileSync('buf', ['build', '-o', '-#format=json'], {
        cwd: fileURLToPath(new URL('../', import.meta.url)),
        maxBuffer: 64 * 1024 * 1024,
      }).toString('utf8'),
    ) as { file: ProtoFile[] };
    const files = built.file.filter((f) => f.package.startsWith('cairn.'));
    expect(files.map((f) => f.name).sort()).toEqual(protoFilesOnDisk());

    const services = files.flatMap((f) => (f.service ?? []).map((s) => `${f.package}.${s.name}`));
    expect(services.length).toBeGreaterThanOrEqual(9);
    for (const service of services) expect(html).toContain(`<h3>${service}</h3>`);

    // Every element (service, method, message, field, oneof, enum, value) has a comment, and the page shows it.
    const elements = files.flatMap((f) => documentedElements(f));
    expect(elements.length).toBeGreaterThan(500);
    const uncommented = elements.filter((e) => !e.comment).map((e) => e.name);
    expect(uncommented).toEqual([]);
    const notShown = elements.filter((e) => !html.includes(escapeHtml(e.comment))).map((e) => e.name);
    expect(notShown).toEqual([]);

    // One field by hand: its comment sits in its own row of its message's table.
    const lookup = html.slice(html.indexOf('<section id="cairn.softbinding.v1.LookupRequest">'));
    expect(lookup.slice(0, lookup.indexOf('</section>'))).toMatch(
      /<tr><td><code>limit<\/code><\/td><td><code>int32<\/code><\/td><td>Most matches to answer, clamped to 1\.\.LOOKUP_MAX_RESULTS/,
    );
  });

  it('serves only the renderer files it names', async () => {
    expect((await stack.request('/docs/assets/swagger-ui-bundle.js')).status).toBe(200);
    expect((await stack.request('/docs/assets/package.json')).status).toBe(404);
    expect((await stack.request('/docs/assets/..%2F..%2Fpackage.json')).status).toBe(404);
  });
});
