// The verifier's entry to C2PA reading: isolates c2pa-rs in child processes and passes the trust list in force
// with each read.
import { ReaderPool, type ReaderPoolOptions } from './reader-pool.js';
import { readerSettingsJson } from './settings.js';
import type { C2paReading, ReadManifestInput } from '../../domain/c2pa/types.js';
import type { ManifestReader, ReadOptions } from '../../app/ports.js';

export type { ManifestReader, ReadOptions } from '../../app/ports.js';

export function createManifestReader(options: ReaderPoolOptions = {}): ManifestReader {
  const pool = new ReaderPool(options);
  return {
    async readManifest(input, readOptions = {}) {
      // The type says false; a JS caller or a widened type could still pass true. Refuse rather than
      // silently ignore it: following remote references is a policy decision this reader does not make.
      if ((input.allowRemoteFetch as boolean) !== false) {
        throw new TypeError('readManifest: remote manifest fetching is not supported (allowRemoteFetch must be false)');
      }
      const settings = readerSettingsJson(input.trustAnchorsPem);
      return pool.read(input.asset, input.mimeType, settings, readOptions.timeoutMs, input.sidecar);
    },
    ready: () => pool.ready(),
    close: () => pool.close(),
    get pids() {
      return pool.pids;
    },
  };
}

let shared: ManifestReader | undefined;

/** Reads with a process-wide pool (2 children, 5 s budget), created on first use. */
export async function readManifest(input: ReadManifestInput, options?: ReadOptions): Promise<C2paReading> {
  shared ??= createManifestReader();
  return shared.readManifest(input, options);
}

/** Stops the process-wide pool (service shutdown, end of tests). */
export async function closeSharedManifestReader(): Promise<void> {
  const reader = shared;
  shared = undefined;
  await reader?.close();
}
