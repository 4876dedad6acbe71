import { escapeHtml } from './html.js';

/**
 * The error catalogue page (`/docs/api/errors`): one row per `cairn.*` code, each with an `id` anchor equal to the
 * code, so a problem's `type` URL (`{DOCS_URL}/api/errors#<code>`) lands on the row that explains it.
 */
export interface ErrorCatalogEntry {
  code: string;
  status: number;
  title: string;
  guidance: string;
}

export function renderErrorCatalogPage(entries: ErrorCatalogEntry[]): string {
  const rows = entries
    .map(
      (e) =>
        `<tr id="${escapeHtml(e.code)}"><th scope="row"><a href="#${escapeHtml(e.code)}"><code>${escapeHtml(e.code)}</code></a></th><td>${e.status}</td><td>${escapeHtml(e.title)}</td><td>${escapeHtml(e.guidance)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Error codes — Cairn API</title>
<style>
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #202124; background: #fff; }
  main { max-width: 1100px; margin: 0 auto; padding: 24px 16px 48px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 8px 12px; border-bottom: 1px solid #e8eaed; vertical-align: top; }
  thead th { color: #3c4043; }
  tr:target { background: #fef7e0; }
  a { color: #1a56c4; }
  code { font-size: .9em; word-break: break-all; }
</style>
</head>
<body>
<main>
<h1>Error codes</h1>
<p>Every error answer is an RFC 7807 problem (<code>application/problem+json</code>) with a stable <code>code</code>; its <code>type</code> URL points at the code's row below. Branch on <code>code</code>, never on <code>title</code> or <code>detail</code>.</p>
<table>
<thead><tr><th scope="col">Code</th><th scope="col">HTTP status</th><th scope="col">Title</th><th scope="col">What to do</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</main>
</body>
</html>`;
}
