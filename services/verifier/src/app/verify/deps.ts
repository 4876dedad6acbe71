import type { BlobStore } from '@cairn/blob';
import type { Database } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { MediaLimits, Modality } from '@cairn/media';
import type { DestinationPolicy } from '@cairn/outbound';
import type { Outbox } from '@cairn/runtime';
import type { JsonValue } from '../../domain/c2pa/crjson.js';
import type { Verdict } from '../../domain/verdict.js';
import type {
  ManifestReader,
  TrustInForce,
  VerifyAnchor,
  VerifySigner,
  VerifySoftBinding,
  VerifyWatermark,
} from '../ports.js';
import type { ReadingMemo } from './reading-memo.js';
import type { SignalCache, SignalEpochs } from './signal-cache.js';

/** What a verify reads from and talks to: the ports the verify use case runs over (service.ts builds them). */
export interface VerifyDeps {
  db: Database;
  /** Where uploads and Cairn's signed files are read. */
  blobs: Pick<BlobStore, 'getBuffer'>;
  reader: ManifestReader;
  /** The C2PA readings of Cairn's own signed files, for a verify of the very same bytes (reading-memo.ts). */
  readings: ReadingMemo;
  /** Answers of OCSP, the anchor check and the public record, until an event or their age ends them (signal-cache.ts). */
  signals: SignalCache;
  /** The tokens of the events those answers depend on, shared by the replicas. */
  signalEpochs: SignalEpochs;
  signer: VerifySigner;
  watermark: VerifyWatermark;
  softbinding: VerifySoftBinding;
  anchor: VerifyAnchor;
  trust: TrustInForce;
  /** Where asset.verified goes (a statement of its own), and a verify job's ending event (in its transaction). */
  outbox: Pick<Outbox, 'enqueue' | 'enqueueAlone' | 'flush'>;
  logger: Logger;
  publicBaseUrl: string;
  ocspTimeoutMs: number;
  /** Where OCSP requests may go (the outbound address policy): never to an internal address a file names. */
  outboundPolicy: DestinationPolicy;
  /** What a verify decodes at most (here, in the watermark service and in the soft-binding service). */
  mediaLimits: MediaLimits;
}

export interface VerifyOutcome {
  verdict: Verdict;
  modality: Modality;
  manifestId?: string;
  assetId?: string;
  verifiedAt: string;
  /** When Cairn's copy of the file named by the input stops being kept (asset_id / manifest_uri inputs). */
  expiresAt?: string;
  /** The asset's anchor batch is not confirmed yet: the verdict will change when it is. */
  anchorPending: boolean;
  /** The crJSON validation report of the reading the verdict came from, when asked (domain/c2pa/crjson.ts). */
  report?: { [key: string]: JsonValue };
}
