/**
 * The `/docs` page: Swagger UI (swagger-ui-dist, served by the gateway) rendering `/openapi.json`. The page
 * itself carries no inline script so its CSP can stay `script-src 'self'`; the start-up code is a served file.
 */
export function renderApiDocsPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cairn API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<header style="font: 15px/1.5 system-ui, sans-serif; padding: 12px 20px; border-bottom: 1px solid #e8eaed">
  <strong>Cairn API</strong> · <a href="/openapi.json">openapi.json</a> · <a href="/docs/api/errors">Error codes</a> ·
  <a href="/docs/internal">Internal gRPC API</a> · <a href="/verify">Verify a file</a>
</header>
<main id="reference"><noscript>This reference needs JavaScript; the same content is in <a href="/openapi.json">/openapi.json</a>.</noscript></main>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`;
}

/** Swagger UI over the same-origin document; "Try it out" sends real requests, so it stays off by default. */
export const API_DOCS_INIT_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#reference',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  displayOperationId: true,
  tryItOutEnabled: false,
  validatorUrl: null
});
`;
