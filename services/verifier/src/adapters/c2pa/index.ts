export { readManifest, createManifestReader, closeSharedManifestReader } from './read-manifest.js';
export type { ManifestReader, ReadOptions } from './read-manifest.js';
export { C2paReaderUnavailableError, C2paSettingsError } from './errors.js';
export { defaultChildEntry } from './reader-pool.js';
export type { ReaderPoolOptions } from './reader-pool.js';
export { TrustListError, readerSettingsJson } from './settings.js';
export { readingFromStore, readingFromError } from '../../domain/c2pa/normalize.js';
export {
  judgeCodes,
  SIGNATURE_FAILURES,
  ASSERTION_FAILURES,
  HARD_BINDING_FAILURES,
} from '../../domain/c2pa/status-codes.js';
export type {
  C2paReading,
  ManifestReading,
  C2paClaims,
  SignerInfo,
  SoftBindingClaim,
  OcspStatus,
  ValidationEntry,
  ReadManifestInput,
} from '../../domain/c2pa/types.js';
