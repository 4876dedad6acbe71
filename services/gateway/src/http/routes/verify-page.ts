import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { BlobStore } from '@cairn/blob';
import { manifestUrl, publicUrl, verifierPageUrl } from '@cairn/config';
import { CairnError, isCairnError, toProblem } from '@cairn/errors';
import { commonV1, isoTimestamp, verificationStatuses, type verifierV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { renderVerifyPage, type PageModel } from '../../domain/verifier-page.js';
import type { RedisRateLimiter } from '../../adapters/rate-limit.js';
import { invoke } from '../invoke.js';
import { addressRateLimit } from '../limits.js';
import { discardUpload, singleUpload } from '../uploads.js';
import { htmlPage, operationsOf, PUBLIC } from '../openapi/describe.js';

export interface VerifyPageDeps {
  verifier: ClientOf<typeof verifierV1.VerifierService>;
  blobs: BlobStore;
  limiter: RedisRateLimiter;
  publicBaseUrl: string;
  docsUrl: string;
  uploadMaxBytes: number;
  /** The public verify's own upload limit (PUBLIC_VERIFY_MAX_BYTES): the page is a public verify. */
  publicVerifyMaxBytes: number;
  publicVerifyPerMinute: number;
}

const SCRIPT_PATH = '/verify/drop.js';

// Scripts and form posts only from the gateway itself; no third-party origin can run or receive anything.
const VERIFY_PAGE_POLICY =
  "default-src 'none'; script-src 'self'; img-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * Drag-and-drop onto the same form the page works with unaided: a dropped file is put into the file input and
 * the form is submitted, so the server renders the result exactly as for a picked file.
 */
const DROP_SCRIPT = `'use strict';
(function () {
  var form = document.getElementById('verify-form');
  if (!form) return;
  var input = form.querySelector('input[type=file]');
  var status = document.getElementById('drop-status');
  function over(on) { return function (event) { event.preventDefault(); form.classList.toggle('over', on); }; }
  form.addEventListener('dragenter', over(true));
  form.addEventListener('dragover', over(true));
  form.addEventListener('dragleave', over(false));
  form.addEventListener('drop', function (event) {
    event.preventDefault();
    form.classList.remove('over');
    var files = event.dataTransfer && event.dataTransfer.files;
    if (!files || files.length === 0) return;
    input.files = files;
    if (status) status.textContent = 'Checking ' + files[0].name + '…';
    form.requestSubmit();
  });
})();
`;

/** Runs an Express middleware as a promise, so its refusal can be rendered as a page instead of Problem+JSON. */
function run(handler: RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => {
    invoke(handler, req, res, (error?: unknown) =>
      error ? reject(error instanceof Error ? error : new Error('middleware refused', { cause: error })) : resolve(),
    );
  });
}

/**
 * The verdict and the manifest's claims as both pages show them (this one and the signed asset's `/v/` page);
 * `signed` fills what the claims leave out.
 */
export function verdictFields(
  result: verifierV1.VerificationResult,
  signed: { by?: string; at?: string } = {},
): Pick<
  PageModel,
  | 'status'
  | 'confidence'
  | 'userExplanation'
  | 'signedBy'
  | 'signingKey'
  | 'signedAt'
  | 'aiGenerated'
  | 'generator'
  | 'model'
  | 'proves'
  | 'doesNotProve'
  | 'warnings'
> {
  const claims = result.claims;
  return {
    status: verificationStatuses.fromProto(result.status),
    confidence: result.confidence ?? null,
    userExplanation: result.userExplanation,
    signedBy: claims?.signedBy || signed.by || undefined,
    signingKey: claims?.signingKey || undefined,
    signedAt: claims?.signedAt || signed.at || undefined,
    ...(claims?.aiGenerated !== undefined ? { aiGenerated: claims.aiGenerated } : {}),
    generator: claims?.generator || undefined,
    model: claims?.model || undefined,
    proves: result.proves,
    doesNotProve: result.doesNotProve,
    warnings: result.warnings,
  };
}

/** A verification result as the page shows it; thumbnails and matches point at the signed assets' `/v/` pages. */
export function pageModelFromResult(
  result: verifierV1.VerificationResult,
  publicBaseUrl: string,
  modality: commonV1.Modality,
): PageModel {
  const matches = result.matches
    .filter((m) => m.assetId)
    .map((m) => ({
      assetId: m.assetId,
      pageUrl: m.verifierUrl || verifierPageUrl(publicBaseUrl, m.assetId),
      via: m.via,
      similarity: m.similarity,
    }));
  // The dropped file itself is never kept, so the thumbnail is the signed original's: the manifest's asset, or
  // else the closest match; only for an image, the one medium the signer makes thumbnails of.
  const thumbnailAsset = modality === commonV1.Modality.IMAGE ? result.assetId || matches[0]?.assetId : undefined;
  return {
    ...(result.assetId ? { assetId: result.assetId } : {}),
    ...verdictFields(result),
    ...(result.manifestId ? { manifestUri: manifestUrl(publicBaseUrl, result.manifestId) } : {}),
    ...(thumbnailAsset
      ? {
          thumbnailUrl: publicUrl(publicBaseUrl, `/v/${thumbnailAsset}/thumbnail.jpg`),
          thumbnailAlt: `Thumbnail of the signed original, asset ${thumbnailAsset}`,
        }
      : {}),
    verifiedAt: isoTimestamp(result.verifiedAt) ?? '',
    matches,
  };
}

export const operations = operationsOf('Pages', PUBLIC, {
  verifyPage: {
    route: 'get /verify',
    summary: 'The public verify page: drop a file',
    answers: [htmlPage('The form')],
  },
  verifyPageSubmit: {
    route: 'post /verify',
    summary: 'The verify page form post',
    body: { kind: 'multipart', files: { file: 'The file to verify' }, required: ['file'] },
    answers: [htmlPage('The verdict page')],
    errors: [
      'cairn.verify.no_input',
      'cairn.validation.body_too_large',
      'cairn.validation.unsupported_media_type',
      'cairn.ratelimit.exceeded',
    ],
  },
});

/** Served but no operation: the page's own script. */
export const staticPaths = [SCRIPT_PATH];

/**
 * `/verify`: the public page anyone can drop a file on. Its post is the public `POST /v1/verify` (the same
 * per-address bucket and limit, the same public upload limit, synchronous, the same verifier call, never
 * metered), answered as HTML.
 */
export function verifyPageRoutes(deps: VerifyPageDeps): Router {
  const router = Router();
  const publicLimit = addressRateLimit(deps.limiter, 'public-verify', {
    limit: deps.publicVerifyPerMinute,
    windowSeconds: 60,
  });
  const upload = singleUpload({
    blobs: deps.blobs,
    field: 'file',
    maxBytes: Math.min(deps.uploadMaxBytes, deps.publicVerifyMaxBytes),
    tooLarge: 'cairn.validation.body_too_large',
  });
  const headers = (res: Response) =>
    res.set({
      'Content-Security-Policy': VERIFY_PAGE_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-store',
    });

  router.get('/verify', (_req, res) => {
    headers(res);
    res.type('html').send(renderVerifyPage({ scriptUrl: SCRIPT_PATH }));
  });

  router.get(SCRIPT_PATH, (_req, res) => {
    res
      .set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'public, max-age=300' })
      .type('text/javascript')
      .send(DROP_SCRIPT);
  });

  router.post('/verify', async (req, res, next) => {
    headers(res);
    try {
      await run(publicLimit, req, res);
      if (!req.is('multipart/form-data'))
        throw new CairnError(
          'cairn.validation.unsupported_media_type',
          'Send the file as a multipart/form-data form post (field "file").',
        );
      await run(upload, req, res);
      if (!req.upload || req.upload.size === 0)
        throw new CairnError('cairn.verify.no_input', 'Choose a file to verify: none arrived, or it was empty.');
      const { result, modality } = await deps.verifier.verify(
        { tenantId: '', input: { case: 'uploadBlobKey', value: req.upload.key } },
        { deadlineMs: 60_000 },
      );
      if (!result) throw new CairnError('cairn.internal_error');
      res.type('html').send(
        renderVerifyPage({
          result: pageModelFromResult(result, deps.publicBaseUrl, modality),
          fileName: req.upload.originalname,
          scriptUrl: SCRIPT_PATH,
        }),
      );
    } catch (error) {
      // Anything unexpected goes to the error handler, which logs it and hides its details.
      if (!isCairnError(error) || error.code === 'cairn.internal_error') return next(error);
      const problem = toProblem(error, { docsUrl: deps.docsUrl, requestId: req.requestId });
      res
        .status(problem.status)
        .type('html')
        .send(
          renderVerifyPage({
            problem: { status: problem.status, code: problem.code, title: problem.title, detail: problem.detail },
            scriptUrl: SCRIPT_PATH,
          }),
        );
    } finally {
      await discardUpload(deps.blobs, req);
    }
  });

  return router;
}
