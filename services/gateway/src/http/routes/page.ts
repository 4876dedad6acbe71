import { Router, type RequestHandler } from 'express';
import { manifestUrl, publicUrl } from '@cairn/config';
import { absentAsUndefined, isCairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import { isoTimestamp, type signerV1, type verifierV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { renderNotFoundPage, renderVerifierPage } from '../../domain/verifier-page.js';
import { verdictFields } from './verify-page.js';
import { bytes, htmlPage, NOT_FOUND, operationsOf, PUBLIC } from '../openapi/describe.js';

const PAGE_POLICY =
  "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface PageDeps {
  signer: ClientOf<typeof signerV1.SignerService>;
  verifier: ClientOf<typeof verifierV1.VerifierService>;
  publicBaseUrl: string;
}

export const operations = operationsOf('Pages', PUBLIC, {
  assetPage: {
    route: 'get /v/:asset_id',
    summary: "A signed asset's public provenance page",
    answers: [htmlPage('The page; the verdict in data-status')],
    errors: NOT_FOUND,
  },
  assetThumbnail: {
    route: 'get /v/:asset_id/thumbnail.jpg',
    summary: "A signed asset's thumbnail",
    answers: [bytes('A JPEG, at most 320 px a side (images only)', 'image/jpeg')],
    errors: NOT_FOUND,
  },
});

/** `/v/{asset_id}`: the human-readable verification page, public and script-free. */
export function pageRoutes(deps: PageDeps): Router {
  const router = Router();
  router.get('/v/:asset_id', servePage(deps));
  router.get('/v/:asset_id/thumbnail.jpg', serveThumbnail(deps.signer));
  return router;
}

function servePage(deps: PageDeps): RequestHandler {
  return async (req, res) => {
    const assetId = String(req.params.asset_id);
    res.set({
      'Content-Security-Policy': PAGE_POLICY,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    });
    const asset = isId('asset', assetId)
      ? await deps.signer.getPublicAsset({ assetId }).then((r) => r.asset, absentAsUndefined)
      : undefined;
    if (!asset) {
      res.status(404).type('html').send(renderNotFoundPage(assetId));
      return;
    }
    // The asset's stored verdict: computed by the verifier from Cairn's own copy, never from anybody's upload.
    const result = await deps.verifier
      .getResult({ manifestId: asset.manifestId }, { deadlineMs: 60_000 })
      .then((r) => r.result, absentAsUndefined);
    if (!result) {
      res.status(404).type('html').send(renderNotFoundPage(assetId));
      return;
    }
    res.set('Cache-Control', 'public, max-age=60');
    res.type('html').send(renderVerifierPage(pageOf(assetId, asset, result, deps.publicBaseUrl)));
  };
}

/** What the page shows of a signed asset and its stored verdict. */
function pageOf(
  assetId: string,
  asset: signerV1.Asset,
  result: verifierV1.VerificationResult,
  publicBaseUrl: string,
): Parameters<typeof renderVerifierPage>[0] {
  return {
    assetId,
    ...verdictFields(result, {
      by: asset.signerName,
      ...(asset.createdAt ? { at: isoTimestamp(asset.createdAt) } : {}),
    }),
    manifestUri: manifestUrl(publicBaseUrl, asset.manifestId),
    // The signer makes thumbnails of images only: another medium gets no picture rather than a broken one.
    ...(asset.expired || !asset.mediaType.startsWith('image/')
      ? {}
      : { thumbnailUrl: publicUrl(publicBaseUrl, `/v/${assetId}/thumbnail.jpg`) }),
    mediaType: asset.mediaType,
    verifiedAt: isoTimestamp(result.verifiedAt) ?? '',
  };
}

/**
 * `/v/{asset_id}/thumbnail.jpg`: made and kept by the signer, which owns the signed file
 * (SignerService.GetThumbnail): the gateway decodes nothing, it passes the bytes on.
 */
function serveThumbnail(signer: PageDeps['signer']): RequestHandler {
  const thumbnail = async (assetId: string): Promise<Uint8Array | undefined> => {
    try {
      return (await signer.getThumbnail({ assetId }, { deadlineMs: 30_000 })).jpeg;
    } catch (error) {
      if (isCairnError(error) && error.code === 'cairn.not_found') return undefined;
      throw error;
    }
  };
  return async (req, res) => {
    const assetId = String(req.params.asset_id);
    const jpeg = isId('asset', assetId) ? await thumbnail(assetId) : undefined;
    if (!jpeg) {
      res.status(404).end();
      return;
    }
    res.set({ 'Content-Type': 'image/jpeg', 'Cache-Control': 'public, max-age=86400' }).send(Buffer.from(jpeg));
  };
}
