// Entry point of the reader child process (an @cairn/isolate task server). c2pa-rs parses hostile files
// natively; a panic or runaway recursion there kills this process, not the verifier. One read at a time; the
// parent kills it when a read overruns. Built as its own entry (dist/reader-child.js next to dist/main.js); run
// from source with `--import tsx`.
import { Reader } from '@contentauth/c2pa-node';
import { serveTasks } from '@cairn/isolate/child';
import { extractManifestStore } from '../../domain/c2pa/asset-store.js';
import { withFileAccess } from './file-access.js';
import { readingFromError, readingFromStore, type StoreReport } from '../../domain/c2pa/normalize.js';
import { parseStoreJson } from '../../domain/c2pa/store-json.js';
import { readerSettingsJson } from './settings.js';
import { isReadTask, type ReadTask } from './protocol.js';
import { C2paSettingsError } from './errors.js';
import type { C2paReading } from '../../domain/c2pa/types.js';

/** Thumbnails above this are not shipped back (a claim thumbnail is a few tens of KB). */
const MAX_THUMBNAIL_BYTES = 4 * 1024 * 1024;

async function thumbnailOf(reader: Reader, json: unknown): Promise<StoreReport['thumbnail']> {
  const thumb = parseStoreJson(json).active?.thumbnail;
  if (!thumb) return undefined;
  try {
    const { buffer } = await reader.resourceToAsset(thumb.identifier, { buffer: null });
    return buffer.length > 0 && buffer.length <= MAX_THUMBNAIL_BYTES
      ? { mimeType: thumb.format, bytes: buffer }
      : undefined;
  } catch {
    return undefined; // a missing thumbnail is not a reason to fail the reading
  }
}

function storeBytes(path: string): Buffer | null {
  try {
    return withFileAccess(path, extractManifestStore);
  } catch {
    return null;
  }
}

async function read(request: ReadTask): Promise<C2paReading> {
  let reader: Reader | null;
  try {
    reader = request.sidecar
      ? await Reader.fromManifestDataAndAsset(
          Buffer.from(request.sidecar),
          { path: request.path, mimeType: request.mimeType },
          request.settings,
        )
      : await Reader.fromAsset({ path: request.path, mimeType: request.mimeType }, request.settings);
  } catch (error) {
    const name = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    const verdict = readingFromError(name, message, request.mimeType);
    // Settings refused are a configuration problem, not something about the file: the parent answers an error.
    if (verdict.type === 'settings') throw new C2paSettingsError(verdict.detail);
    return verdict.reading;
  }
  if (!reader) return { kind: 'none' };
  const json: unknown = reader.json();
  return readingFromStore({
    storeJson: json,
    manifestStore: request.sidecar ? Buffer.from(request.sidecar) : storeBytes(request.path),
    thumbnail: await thumbnailOf(reader, json),
  });
}

serveTasks(
  async (payload) => {
    if (!isReadTask(payload)) throw new TypeError('not a read task');
    return read(payload);
  },
  // Load the 67 MB native addon now rather than on the first request, so that the first file's time budget
  // is spent on the file. A two-byte "JPEG" has no JUMBF: c2pa-node answers null or throws, and either way the
  // addon is loaded, which is all the warm-up is for.
  async () => {
    await Reader.fromAsset(
      { buffer: Buffer.from([0xff, 0xd8, 0xff, 0xd9]), mimeType: 'image/jpeg' },
      readerSettingsJson([]),
    ).catch(() => null); // the throw is the expected answer for a file without JUMBF
  },
);
