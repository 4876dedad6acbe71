import { Router } from 'express';
import { ERROR_CATALOG, errorGuidance, type ErrorCode } from '@cairn/errors';
import { renderErrorCatalogPage } from '../../domain/error-catalog-page.js';
import { htmlPage, operationsOf, PUBLIC } from '../openapi/describe.js';

const PAGE_POLICY =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** `/docs/api/errors`: the page every problem `type` URL resolves to (DOCS_URL defaults to the gateway's `/docs`). */
export function errorDocsRoutes(): Router {
  const router = Router();
  // The catalog is fixed for the life of the process: render once.
  const html = renderErrorCatalogPage(
    (Object.entries(ERROR_CATALOG) as Array<[ErrorCode, { status: number; title: string }]>).map(([code, entry]) => ({
      code,
      status: entry.status,
      title: entry.title,
      guidance: errorGuidance(code, entry.status),
    })),
  );
  router.get('/docs/api/errors', (_req, res) => {
    res
      .set({
        'Content-Security-Policy': PAGE_POLICY,
        'X-Content-Type-Options': 'nosniff',
        'Cache-Control': 'public, max-age=300',
      })
      .type('html')
      .send(html);
  });
  return router;
}

export const operations = operationsOf('Docs', PUBLIC, {
  errorCatalogue: {
    route: 'get /docs/api/errors',
    summary: 'The error catalogue (every problem type URL lands here)',
    answers: [htmlPage('One anchor per cairn.* code')],
  },
});
