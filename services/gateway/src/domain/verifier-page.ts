import { escapeHtml } from './html.js';

/**
 * The public verification page (`/v/{asset_id}`): server-rendered, no JavaScript, readable by anyone. It
 * states the verdict in plain words, who signed and when, whether the content is AI-generated, and what the
 * evidence does and does not prove.
 */
export interface PageModel {
  /** The Cairn asset the verdict is about; absent for a dropped file Cairn could not tie to one. */
  assetId?: string;
  status: string;
  confidence: number | null;
  userExplanation: string;
  signedBy?: string;
  /** The verdict's signing_key claim: 'tenant' when a Cairn asset was signed with its tenant's own key (BYOK). */
  signingKey?: string;
  signedAt?: string;
  aiGenerated?: boolean;
  generator?: string;
  model?: string;
  proves: string[];
  doesNotProve: string[];
  warnings: string[];
  manifestUri?: string;
  thumbnailUrl?: string;
  mediaType?: string;
  verifiedAt: string;
  /** What the thumbnail shows (a dropped file's thumbnail is its signed original's, not the file itself). */
  thumbnailAlt?: string;
  /** Signed assets the file was tied to by watermark or fingerprint, each with its own `/v/` page. */
  matches?: PageMatch[];
}

export interface PageMatch {
  assetId: string;
  pageUrl: string;
  via: string;
  similarity: number;
}

type Tone = 'good' | 'caution' | 'bad' | 'neutral';

const HEADLINES: Record<string, { text: string; tone: Tone }> = {
  verified_manifest_and_watermark_match: { text: 'Verified', tone: 'good' },
  verified_manifest: { text: 'Verified', tone: 'good' },
  watermark_only: { text: 'Provenance found (watermark)', tone: 'caution' },
  fingerprint_match_only: { text: 'Similar to a signed asset', tone: 'caution' },
  manifest_signer_untrusted: { text: 'Signed by an unrecognised signer', tone: 'caution' },
  manifest_certificate_expired: { text: 'Signed with an expired certificate', tone: 'caution' },
  manifest_watermark_conflict: { text: 'Signature and watermark disagree', tone: 'bad' },
  anchor_mismatch: { text: 'Ledger record does not match', tone: 'bad' },
  manifest_content_modified: { text: 'Changed after signing', tone: 'bad' },
  manifest_tampered: { text: 'Tampered', tone: 'bad' },
  manifest_signer_revoked: { text: 'Signer revoked', tone: 'bad' },
  manifest_malformed: { text: 'Damaged provenance data', tone: 'bad' },
  manifest_unreachable: { text: 'Provenance data unreachable', tone: 'neutral' },
  watermark_unregistered: { text: 'Unknown watermark', tone: 'neutral' },
  no_provenance: { text: 'No provenance found', tone: 'neutral' },
  inconclusive: { text: 'Could not complete the check', tone: 'neutral' },
};

const TONES: Record<Tone, { bg: string; fg: string }> = {
  good: { bg: '#e6f4ea', fg: '#0d652d' },
  caution: { bg: '#fef7e0', fg: '#7a4f01' },
  bad: { bg: '#fce8e6', fg: '#a50e0e' },
  neutral: { bg: '#f1f3f4', fg: '#3c4043' },
};

function formatDate(iso: string | undefined): string | undefined {
  if (!iso) return undefined;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? undefined : date.toUTCString().replace(' GMT', ' UTC');
}

/** Cairn hosts the page, so it says plainly when the key was not Cairn's and what Cairn did check. */
const TENANT_KEY =
  'Signed with the tenant’s own key (bring your own key), not Cairn’s. Cairn checked that the tenant holds this key; the name above is from the tenant’s certificate.';

/**
 * A signer trusted only through the frozen interim trust list is told apart from one on the official C2PA Trust
 * List (the verdict's `interim_trust_list` warning).
 */
const INTERIM_TRUST =
  'Trusted through the interim trust list only: a frozen list of known signers kept before the official C2PA Trust List, not that list.';

function row(label: string, value: string | undefined): string {
  return value ? `<tr><th scope="row">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>` : '';
}

const STYLE = `
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #202124; background: #fff; }
  main { max-width: 760px; margin: 0 auto; padding: 24px 16px 48px; }
  .verdict { background: var(--tone-bg); color: var(--tone-fg); border-radius: 12px; padding: 20px 24px; display: flex; gap: 20px; align-items: flex-start; }
  .verdict h1 { margin: 0 0 6px; font-size: 1.6rem; }
  .verdict p { margin: 0; color: #202124; }
  .thumb { width: 160px; height: auto; border-radius: 8px; border: 1px solid rgba(0,0,0,.1); flex: none; background: #fff; }
  table { border-collapse: collapse; width: 100%; margin: 24px 0; }
  th, td { text-align: left; padding: 8px 12px; border-bottom: 1px solid #e8eaed; vertical-align: top; }
  th { width: 38%; color: #5f6368; font-weight: 500; }
  h2 { font-size: 1.1rem; margin: 28px 0 8px; }
  .muted { color: #5f6368; }
  footer { margin-top: 36px; font-size: .85rem; color: #5f6368; }
  code { font-size: .9em; word-break: break-all; }
  a { color: #1a56c4; }
  a:focus-visible, button:focus-visible, input:focus-visible { outline: 3px solid #1a56c4; outline-offset: 2px; }
  .drop { border: 2px dashed #5f6368; border-radius: 12px; padding: 24px; margin: 24px 0; }
  .drop.over { border-color: #1a56c4; background: #e8f0fe; }
  .drop label { display: block; font-weight: 600; margin-bottom: 8px; }
  .drop button { font: inherit; margin-top: 12px; padding: 8px 20px; border-radius: 8px; border: 0; background: #1a56c4; color: #fff; cursor: pointer; }
  .problem { background: #fce8e6; color: #a50e0e; border-radius: 12px; padding: 16px 24px; }
  .problem p { color: #202124; margin: 4px 0 0; }
`;

/** The HTML document around a page's body: one stylesheet, `lang`, and optionally the page's own script. */
function document(title: string, body: string, script?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
${script ? `<script src="${escapeHtml(script)}" defer></script>\n` : ''}</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

/** The verdict, its details and what it does and does not prove: the part `/v/` and `/verify` share. */
function renderVerdict(model: PageModel): string {
  const headline = HEADLINES[model.status] ?? { text: model.status, tone: 'neutral' as const };
  const tone = TONES[headline.tone];
  const ai =
    model.aiGenerated === undefined
      ? undefined
      : model.aiGenerated
        ? 'Yes — declared AI-generated by the signer'
        : 'Not declared AI-generated';
  const list = (items: string[]) =>
    items.length
      ? `<ul>${items.map((i) => `<li>${escapeHtml(i)}</li>`).join('')}</ul>`
      : '<p class="muted">Nothing.</p>';
  const matches = model.matches ?? [];
  return `<section class="verdict" aria-label="Verdict" style="--tone-bg: ${tone.bg}; --tone-fg: ${tone.fg}">
    ${model.thumbnailUrl ? `<img class="thumb" src="${escapeHtml(model.thumbnailUrl)}" alt="${escapeHtml(model.thumbnailAlt ?? 'Thumbnail of the verified file')}">` : ''}
    <div>
      <h1 data-status="${escapeHtml(model.status)}">${escapeHtml(headline.text)}</h1>
      <p>${escapeHtml(model.userExplanation)}</p>
    </div>
  </section>
  <table>
    ${row('Signed by', model.signedBy)}
    ${row('Signing key', model.signingKey === 'tenant' ? TENANT_KEY : undefined)}
    ${model.warnings.includes('interim_trust_list') ? row('Trust list', INTERIM_TRUST).replace('<tr>', '<tr data-trust-list="interim">') : ''}
    ${row('Signed on', formatDate(model.signedAt))}
    ${row('AI-generated', ai)}
    ${row('Generator', model.generator)}
    ${row('Model', model.model)}
    ${row('File type', model.mediaType)}
    ${row('Confidence', model.confidence === null ? 'Not applicable (a hard failure)' : `${Math.round(model.confidence * 100)}%`)}
    ${row('Checked', formatDate(model.verifiedAt))}
  </table>
  ${
    matches.length
      ? `<h2>Where it came from</h2><ul class="matches">${matches
          .map(
            (m) =>
              `<li><a href="${escapeHtml(m.pageUrl)}">Signed asset ${escapeHtml(m.assetId)}</a> — found by ${escapeHtml(m.via)}${m.similarity ? ` (similarity ${Math.round(m.similarity * 100)}%)` : ''}</li>`,
          )
          .join('')}</ul>`
      : ''
  }
  <h2>What this proves</h2>
  ${list(model.proves)}
  <h2>What this does not prove</h2>
  ${list(model.doesNotProve)}
  ${model.warnings.length ? `<h2>Notes</h2>${list(model.warnings.map((w) => w.replace(/_/g, ' ')))}` : ''}`;
}

export function renderVerifierPage(model: PageModel): string {
  const headline = HEADLINES[model.status] ?? { text: model.status, tone: 'neutral' as const };
  const assetId = model.assetId ?? '';
  return document(
    `${headline.text} — Cairn verification of ${assetId}`,
    `${renderVerdict(model)}
  <footer>
    <p>Asset <code>${escapeHtml(assetId)}</code>${model.manifestUri ? ` · <a href="${escapeHtml(model.manifestUri)}">C2PA manifest</a>` : ''} · Status code <code>${escapeHtml(model.status)}</code></p>
    <p>Verified by Cairn against the C2PA standard. Any C2PA-aware tool can check the manifest independently.</p>
    <p>Have a copy of a file? <a href="/verify">Check any file on the verify page</a>.</p>
  </footer>`,
  );
}

/** A refused check on the `/verify` page: the problem's title and detail, its HTTP status and `cairn.*` code. */
export interface PageProblem {
  status: number;
  code: string;
  title: string;
  detail: string;
}

/**
 * `/verify`: a form anyone can drop or pick a file on. It works as a plain multipart form post without
 * JavaScript; the script only adds drag-and-drop onto the same form. With a result, the verdict comes first
 * and the form follows to check another file.
 */
export function renderVerifyPage(view: {
  result?: PageModel;
  problem?: PageProblem;
  fileName?: string;
  scriptUrl: string;
}): string {
  const checked = view.fileName ? `<p class="muted">File checked: <code>${escapeHtml(view.fileName)}</code></p>` : '';
  const problem = view.problem
    ? `<section class="problem" role="alert" aria-label="Problem" data-problem="${escapeHtml(view.problem.code)}" data-http-status="${view.problem.status}">
    <h1>${escapeHtml(view.problem.title)}</h1>
    <p>${escapeHtml(view.problem.detail)}</p>
    <p class="muted">Error <code>${escapeHtml(view.problem.code)}</code> (HTTP ${view.problem.status})</p>
  </section>`
    : '';
  const intro =
    view.result || view.problem
      ? ''
      : `<h1>Where did this file come from?</h1>
  <p>Drop an image, audio, video or text file below, or choose one. Cairn checks its C2PA manifest, its invisible watermark and its fingerprint, and tells you who signed it, when, and whether it was declared AI-generated. The file is checked and then discarded.</p>`;
  const heading = view.result || view.problem ? 'h2' : 'p';
  const form = `<form class="drop" id="verify-form" method="post" action="/verify" enctype="multipart/form-data">
    <${heading} id="form-heading">${view.result || view.problem ? 'Check another file' : 'Drop a file here, or:'}</${heading}>
    <label for="file">Choose a file to verify</label>
    <input id="file" name="file" type="file" required aria-describedby="form-heading drop-status">
    <div><button type="submit">Verify</button></div>
    <p id="drop-status" class="muted" aria-live="polite"></p>
  </form>`;
  const title = view.result
    ? `${(HEADLINES[view.result.status] ?? { text: view.result.status }).text} — Cairn verify`
    : view.problem
      ? `${view.problem.title} — Cairn verify`
      : 'Verify a file — Cairn';
  return document(
    title,
    `${problem}${view.result ? renderVerdict(view.result) : intro}
  ${view.result ? checked : ''}
  ${form}
  <footer>
    <p>Anyone can use this page; checks are limited per address. Developers: the same check is <code>POST /v1/verify</code>.</p>
    ${view.result ? `<p>Status code <code>${escapeHtml(view.result.status)}</code>${view.result.manifestUri ? ` · <a href="${escapeHtml(view.result.manifestUri)}">C2PA manifest</a>` : ''}</p>` : ''}
  </footer>`,
    view.scriptUrl,
  );
}

export function renderNotFoundPage(assetId: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found — Cairn</title></head><body style="font:16px system-ui,sans-serif;max-width:640px;margin:48px auto;padding:0 16px"><h1>No such asset</h1><p>Cairn has no signed asset <code>${escapeHtml(assetId)}</code>.</p><p><a href="/verify">Check a file on the verify page</a></p></body></html>`;
}
