import { blobKeys, PUBLIC_OWNER, type BlobStore } from '@cairn/blob';
import { isImageWatermarkAlg, type ImageWatermarkAlg } from '@cairn/catalog';
import { publicUrl } from '@cairn/config';
import { absentAsUndefined, CairnError, isCairnError } from '@cairn/errors';
import { isId, newId } from '@cairn/ids';
import type { softbindingV1 } from '@cairn/proto';
import { sniffMediaType } from '@cairn/sniff';
import type { ReferenceFetcher } from './ports.js';
import { uploadHead } from './upload-head.js';
import { ManifestRepositoryApi } from './c2pa-repository.js';
import type { SignerClient, SoftBindingClient, WatermarkClient } from './ports.js';

export type { SignerClient, SoftBindingClient, WatermarkClient } from './ports.js';

/** Where the C2PA Soft Binding Resolution API lives: its own version segment, like the spec's `…/v1` server URL. */
export const C2PA_RESOLUTION_PREFIX = '/c2pa/v1';

/** The image watermarks' payload: 8 bytes (cairn-sync-v2 and the earlier keyed and keyless marks). */
export const WATERMARK_PAYLOAD_BYTES = 8;
/** Matches per query when the caller gives no maxResults (the spec's default), and the most we ever return. */
export const DEFAULT_RESULTS = 10;
export const MAX_RESULTS = 100;

/** One match in the spec's `c2pa.softBindingQueryResult` shape: public fields only. */
export interface SpecMatch {
  manifestId: string;
  endpoint: string;
  similarityScore?: number;
}

export interface ResolutionDeps {
  blobs: BlobStore;
  softbinding: SoftBindingClient;
  signer: SignerClient;
  watermark: WatermarkClient;
  publicBaseUrl: string;
  /** byReference: fetches a URL a caller names, under the outbound address policy. */
  fetchReference: ReferenceFetcher;
  /** byReference: the largest asset fetched (held in memory while it is read, so smaller than uploads). */
  referenceMaxBytes: number;
  /** byReference: fetches this process runs at once; one more is refused, not queued. */
  referenceFetchesAtOnce: number;
}

/** A query on content: the algorithm asked for (optional, as in the spec) and how many matches. */
export interface ContentQuery {
  alg?: string;
  limit: number;
}

/**
 * The queries of the Soft Binding Resolution API. Cairn's own matches (its signed assets, through the soft-binding
 * service's public Lookup and the watermark registry) come first; manifests tenants stored in the repository
 * (POST /c2pa/v1/manifests) follow, found only by the values bound to them. The verifier never reads the repository,
 * so nothing stored there changes what verifying a Cairn-signed asset answers.
 */
export class SoftBindingResolution {
  readonly apiBase: string;
  readonly algorithms: () => Promise<softbindingV1.Algorithm[]>;
  private readonly repository: ManifestRepositoryApi;
  /** byReference fetches running in this process (deps.referenceFetchesAtOnce at most). */
  private referencesInFlight = 0;

  constructor(private readonly deps: ResolutionDeps) {
    this.apiBase = publicUrl(deps.publicBaseUrl, C2PA_RESOLUTION_PREFIX);
    this.algorithms = supportedAlgorithmsCache(deps.softbinding);
    this.repository = new ManifestRepositoryApi(deps.softbinding, this.apiBase);
  }

  private match(manifestId: string, similarity: number | undefined): SpecMatch {
    return {
      manifestId,
      endpoint: this.apiBase,
      ...(similarity === undefined
        ? {}
        : { similarityScore: Math.max(0, Math.min(100, Math.round(similarity * 100))) }),
    };
  }

  /** The fingerprint algorithms of the soft-binding service. */
  async fingerprintAlgs(): Promise<string[]> {
    return (await this.algorithms()).filter((a) => a.kind === 'fingerprint').map((a) => a.alg);
  }

  /** Fingerprint matches from the public Lookup, as spec matches (one per manifest, best first). */
  private async fingerprintMatches(
    query: softbindingV1.LookupRequest['query'],
    limit: number,
    alg?: string,
  ): Promise<SpecMatch[]> {
    const { matches } = await this.deps.softbinding.lookup({ tenantId: '', query, limit }, { deadlineMs: 30_000 });
    // The service picks the algorithm from the content; a caller who named one gets that one's matches only.
    return matches.flatMap((m) => {
      if (alg !== undefined && m.alg && m.alg !== alg) return [];
      const id = manifestIdOf(m.manifestUri);
      return id ? [this.match(id, m.similarity)] : [];
    });
  }

  /** A registered watermark payload of algorithm `alg` → the manifest of the asset it was embedded in. */
  private async watermarkMatch(payloadHex: string, alg: string, confidence: number | undefined): Promise<SpecMatch[]> {
    const mark = await this.deps.watermark.resolvePayload({ payloadHex }, { deadlineMs: 10_000 });
    if (!mark.registered || mark.algorithm !== alg || !isId('asset', mark.assetId)) return [];
    const asset = await this.deps.signer
      .getPublicAsset({ assetId: mark.assetId })
      .then((r) => r.asset, absentAsUndefined);
    return asset?.manifestId ? [this.match(asset.manifestId, confidence)] : [];
  }

  /** Stored manifests bound to the value (under `alg`, or bound with no algorithm). */
  private async storedMatches(alg: string, value: string, limit: number): Promise<SpecMatch[]> {
    const { manifestIds } = await this.deps.softbinding.findBindings({ alg, value, limit }, { deadlineMs: 10_000 });
    return manifestIds.map((id) => this.match(id, undefined));
  }

  /**
   * byBinding: a watermark payload or a fingerprint of Cairn's algorithms, then the repository's bindings. An
   * algorithm Cairn does not compute (any other name) is looked up in the repository only.
   */
  async byBinding(alg: string, value: string, limit: number): Promise<SpecMatch[]> {
    const own: SpecMatch[] = [];
    if (isImageWatermarkAlg(alg)) {
      own.push(
        ...(await this.watermarkMatch(
          bindingBytes(value, WATERMARK_PAYLOAD_BYTES, alg).toString('hex'),
          alg,
          undefined,
        )),
      );
    } else {
      const known = (await this.algorithms()).find((a) => a.alg === alg && a.kind === 'fingerprint');
      if (known && known.valueHexDigits > 0) {
        const hex = bindingBytes(value, known.valueHexDigits / 2, alg).toString('hex');
        own.push(
          ...(await this.fingerprintMatches(
            { case: 'binding', value: { alg, value: hex, $typeName: 'cairn.softbinding.v1.Binding' } },
            limit,
          )),
        );
      }
    }
    return distinct([...own, ...(await this.storedMatches(alg, value, limit))], limit);
  }

  /**
   * byContent / byReference on a stored upload: without `alg` every algorithm runs (the watermark, an exact
   * identification, first; then fingerprints); with one, that algorithm only.
   */
  async byUpload(upload: { key: string; head?: Buffer }, query: ContentQuery): Promise<SpecMatch[]> {
    const { key } = upload;
    const found: SpecMatch[] = [];
    const fingerprints = await this.fingerprintAlgs();
    const watermarkAlg = isImageWatermarkAlg(query.alg) ? query.alg : undefined;
    const watermarkOnly = watermarkAlg !== undefined;
    if (query.alg !== undefined && !watermarkOnly && !fingerprints.includes(query.alg)) {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `Unsupported soft binding algorithm "${query.alg}"; GET ${C2PA_RESOLUTION_PREFIX}/services/supportedAlgorithms lists the supported ones.`,
      );
    }
    const head = upload.head ?? (await uploadHead(this.deps.blobs, key));
    if (!head) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the asset again.');
    const sniffed = sniffMediaType(head);
    if (!sniffed)
      throw new CairnError(
        'cairn.verify.unsupported_file_type',
        'The body is not an asset type this service reads (images: JPEG, PNG, WebP).',
      );
    if (watermarkOnly && sniffed.modality !== 'image')
      throw new CairnError('cairn.verify.unsupported_file_type', `${query.alg} reads images (JPEG, PNG, WebP).`);
    if ((query.alg === undefined && sniffed.modality === 'image') || watermarkOnly) {
      const detected = await this.detectWatermark(key, watermarkAlg);
      // The detector says which algorithm read the mark; a caller who named the other one gets no match.
      if (detected && (query.alg === undefined || detected.algorithm === query.alg))
        found.push(...(await this.watermarkMatch(detected.payloadHex, detected.algorithm, detected.confidence)));
    }
    if (!watermarkOnly)
      found.push(...(await this.fingerprintMatches({ case: 'uploadBlobKey', value: key }, query.limit, query.alg)));
    return distinct(found, query.limit);
  }

  /**
   * Reads the watermark of an uploaded image. Undefined when none is found, or when the file is not an image the
   * watermark service can decode (then the fingerprints decide), unless the caller asked for a watermark alone
   * (`only`): then an undecodable file is the spec's 415.
   */
  private async detectWatermark(
    key: string,
    only: ImageWatermarkAlg | undefined,
  ): Promise<{ payloadHex: string; confidence: number; algorithm: string } | undefined> {
    const bytes = await this.deps.blobs.getBuffer(key);
    if (!bytes) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the asset again.');
    const undecodable = () => {
      if (only) throw new CairnError('cairn.verify.unsupported_file_type', `${only} reads images (JPEG, PNG, WebP).`);
      return undefined;
    };
    // The file as received: the watermark service reads its header and decodes it under its own media limits (a
    // bomb is its cairn.media.too_large, passed on; what it cannot read is its invalid_body). The gateway decodes
    // nothing.
    let found;
    try {
      found = await this.deps.watermark.detectImage({ encoded: bytes }, { deadlineMs: 30_000 });
    } catch (error) {
      if (isCairnError(error) && error.code === 'cairn.validation.invalid_body') return undecodable();
      throw error;
    }
    // A mark the watermark service found on other content than it was embedded in (copied) leads nowhere.
    return found.detected && found.contentConsistent !== false
      ? { payloadHex: found.payloadHex, confidence: found.confidence, algorithm: found.algorithm }
      : undefined;
  }

  /**
   * byReference: the asset a caller names, fetched (adapters/reference-fetch.ts) into a public upload, queried as
   * byContent's upload is, and deleted before the answer leaves.
   */
  async byReference(referenceUrl: string, assetLength: number, query: ContentQuery): Promise<SpecMatch[]> {
    if (assetLength > this.deps.referenceMaxBytes)
      throw new CairnError(
        'cairn.validation.body_too_large',
        `assetLength is over the ${Math.round(this.deps.referenceMaxBytes / (1024 * 1024))} MB this service fetches; upload the asset to POST ${C2PA_RESOLUTION_PREFIX}/matches/byContent instead.`,
      );
    // Refused rather than queued: a queue would hold the callers' connections and hand the next fetch to whoever
    // waits longest, and the bytes each fetch holds are what the cap bounds.
    if (this.referencesInFlight >= this.deps.referenceFetchesAtOnce)
      throw new CairnError(
        'cairn.unavailable',
        `This service is already fetching ${this.deps.referenceFetchesAtOnce} referenced assets; retry shortly, or upload the asset to POST ${C2PA_RESOLUTION_PREFIX}/matches/byContent.`,
      );
    this.referencesInFlight++;
    try {
      return await this.fetchAndQuery(referenceUrl, assetLength, query);
    } finally {
      this.referencesInFlight--;
    }
  }

  /** The referenced asset fetched into a public upload, queried, and the upload deleted. */
  private async fetchAndQuery(referenceUrl: string, assetLength: number, query: ContentQuery): Promise<SpecMatch[]> {
    const key = await this.fetchReference(referenceUrl, assetLength);
    try {
      return await this.byUpload({ key }, query);
    } finally {
      // Best effort, as for byContent's upload: the answer does not depend on it; a failed delete leaves an
      // unreferenced public upload behind.
      await this.deps.blobs.delete(key).catch(() => undefined);
    }
  }

  /** The referenced asset's bytes, stored as a public upload; its key. */
  private async fetchReference(referenceUrl: string, assetLength: number): Promise<string> {
    const bytes = await this.deps.fetchReference(referenceUrl, assetLength);
    const key = blobKeys.upload(PUBLIC_OWNER, newId('request').slice(4));
    await this.deps.blobs.put(key, bytes, { contentType: 'application/octet-stream' });
    return key;
  }

  /**
   * The manifest store a manifest id names: Cairn's manifest id (m_…, as in matches), the C2PA manifest label a client
   * reads from the file (urn:c2pa:…), or a stored manifest's id (sm_…). A stored manifest is served exactly as
   * uploaded (the spec's round trip); `activeManifestOnly` applies to Cairn's own, which the signer cuts down (it
   * owns the stores, the gateway only passes bytes). Anything else is a manifest this repository does not hold
   * (the signer's not_found).
   */
  async manifest(manifestId: string, activeManifestOnly: boolean): Promise<Buffer> {
    const stored = await this.repository.manifest(manifestId);
    if (stored) return stored;
    const { manifestStore } = await this.deps.signer.getManifest({ ...manifestRef(manifestId), activeManifestOnly });
    return Buffer.from(manifestStore);
  }

  /**
   * `ok` when every service behind the API answers; `down` when manifests cannot be served or nothing can be looked
   * up (signer, soft-binding service); `degraded` when only watermark resolution is out.
   */
  async status(): Promise<'ok' | 'degraded' | 'down'> {
    const answers = (call: Promise<unknown>) =>
      call.then(
        () => true,
        (error: unknown) =>
          isCairnError(error) && error.code !== 'cairn.unavailable' && error.code !== 'cairn.internal_error',
      );
    const [signer, softbinding, watermark] = await Promise.all([
      answers(this.deps.signer.getTrustAnchors({}, { deadlineMs: 2000 })),
      answers(this.deps.softbinding.supportedAlgorithms({}, { deadlineMs: 2000 })),
      answers(
        this.deps.watermark.resolvePayload({ payloadHex: '00'.repeat(WATERMARK_PAYLOAD_BYTES) }, { deadlineMs: 2000 }),
      ),
    ]);
    if (!signer || !softbinding) return 'down';
    return watermark ? 'ok' : 'degraded';
  }
}

/** A manifest named in a path: Cairn's manifest id, or the C2PA manifest label of its active manifest. */
export function manifestRef(param: string): { manifestId: string } | { label: string } {
  return param.startsWith('urn:') ? { label: param } : { manifestId: param };
}

/** The supported algorithms of the soft-binding service, asked at most once a minute. */
function supportedAlgorithmsCache(softbinding: SoftBindingClient): () => Promise<softbindingV1.Algorithm[]> {
  let cached: { at: number; value: Promise<softbindingV1.Algorithm[]> } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > 60_000) {
      const value = softbinding.supportedAlgorithms({}, { deadlineMs: 10_000 }).then((r) => r.algorithms);
      cached = { at: Date.now(), value };
      value.catch(() => (cached = undefined));
    }
    return cached.value;
  };
}

/**
 * A binding value as bytes. The spec's form is base64 (standard or URL-safe alphabet, padding optional);
 * Cairn's own hex form (as written in its manifests' soft-binding assertions and in /v1/lookup) is accepted
 * too. The two never collide: for a value of n bytes hex has 2n characters, base64 about 4n/3.
 */
export function bindingBytes(value: string, bytes: number, alg: string): Buffer {
  if (value.length === bytes * 2 && /^[0-9a-f]+$/i.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) {
    const normalized = value.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    const decoded = Buffer.from(normalized, 'base64');
    if (decoded.length === bytes && decoded.toString('base64').replace(/=+$/, '') === normalized) return decoded;
  }
  throw new CairnError(
    'cairn.validation.invalid_body',
    `A ${alg} binding value is ${bytes} bytes, base64-encoded (or ${bytes * 2} hex digits).`,
  );
}

/** The manifest id of one of Cairn's own manifest URIs (…/v1/manifests/m_…), or undefined. */
function manifestIdOf(manifestUri: string): string | undefined {
  let path: string;
  try {
    path = new URL(manifestUri).pathname;
  } catch {
    return undefined;
  }
  const id = /\/v1\/manifests\/([^/]+)$/.exec(path)?.[1];
  return id && isId('manifest', id) ? id : undefined;
}

/**
 * One match per manifest, where it first appeared (a watermark's before fingerprints', Cairn's before the
 * repository's), scored with the best similarity any algorithm gave it: a mark read weakly on a copy the fingerprint
 * finds nearly identical is that close, not as close as the weak read.
 */
export function distinct(matches: SpecMatch[], limit: number): SpecMatch[] {
  const byManifest = new Map<string, SpecMatch>();
  for (const m of matches) {
    const kept = byManifest.get(m.manifestId);
    if (!kept) byManifest.set(m.manifestId, m);
    else if (m.similarityScore !== undefined && (kept.similarityScore ?? -1) < m.similarityScore)
      byManifest.set(m.manifestId, { ...kept, similarityScore: m.similarityScore });
  }
  return [...byManifest.values()].slice(0, limit);
}
