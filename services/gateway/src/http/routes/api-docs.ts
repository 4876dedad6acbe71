import { Router, type Response } from 'express';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { renderApiDocsPage, API_DOCS_INIT_SCRIPT } from '../../domain/api-docs-page.js';
import { htmlPage, json, operationsOf, PUBLIC } from '../openapi/describe.js';

/** The renderer's files, served from the installed package so the page needs no CDN. */
const RENDERER_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSET_FILES: Record<string, string> = { 'swagger-ui.css': 'text/css', 'swagger-ui-bundle.js': 'text/javascript' };

/**
 * Only this page runs the renderer's bundle: scripts and styles from the gateway itself, the document fetched
 * from the same origin. Swagger UI sets style attributes and shows data: SVG icons, hence those two allowances;
 * no 'unsafe-eval', no inline script.
 */
const DOCS_PAGE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const operations = operationsOf('Docs', PUBLIC, {
  openApiDocument: {
    route: 'get /openapi.json',
    summary: 'This OpenAPI 3.1 document',
    answers: [json(200, 'The document', { openapi: '3.1.0' })],
  },
  apiReference: {
    route: 'get /docs',
    summary: 'The API reference rendered from this document',
    answers: [htmlPage('The reference page')],
  },
  internalApiReference: {
    route: 'get /docs/internal',
    summary: 'The internal gRPC API reference (for teams calling the services)',
    answers: [htmlPage('The reference page')],
  },
});

/** Served but no operation: the renderer's files. */
export const staticPaths = ['/docs/assets/:file'];

/**
 * `GET /openapi.json`, `GET /docs` (Swagger UI over it) and the renderer's assets. The document comes built by the
 * app, so the route modules can describe their operations for it (this one too) without a cycle of imports.
 */
export function apiDocsRoutes(deps: {
  openApiDocument: Record<string, unknown>;
  internalReferenceHtml: () => string | undefined;
}): Router {
  const router = Router();
  // The document depends only on the code: serve the same bytes.
  const document = JSON.stringify(deps.openApiDocument);
  const page = renderApiDocsPage();
  // Read once at start: a missing renderer is a start-up error, not a 500 on the first reader.
  const assets = new Map<string, { bytes: Buffer; type: string }>(
    Object.entries(ASSET_FILES).map(([name, type]) => [name, { bytes: readFileSync(join(RENDERER_DIR, name)), type }]),
  );
  assets.set('init.js', { bytes: Buffer.from(API_DOCS_INIT_SCRIPT), type: 'text/javascript' });
  const cache = (res: Response) =>
    res.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'public, max-age=300' });

  router.get('/openapi.json', (_req, res) => {
    cache(res).set('Access-Control-Allow-Origin', '*').type('application/json').send(document);
  });
  router.get('/docs', (_req, res) => {
    cache(res)
      .set({ 'Content-Security-Policy': DOCS_PAGE_POLICY, 'Referrer-Policy': 'no-referrer' })
      .type('html')
      .send(page);
  });
  router.get('/docs/assets/:file', (req, res, next) => {
    const asset = assets.get(String(req.params.file));
    if (!asset) return next();
    cache(res).type(asset.type).send(asset.bytes);
  });
  router.get('/docs/internal', (_req, res, next) => {
    const html = deps.internalReferenceHtml();
    if (!html) return next();
    cache(res)
      .set({
        'Content-Security-Policy':
          "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      })
      .type('html')
      .send(html);
  });
  return router;
}
