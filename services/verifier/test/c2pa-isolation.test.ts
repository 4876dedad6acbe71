// Crash isolation of the C2PA reader: a child that dies, hangs or cannot start never takes the verifier down,
// and a file is only called malformed when reading it is what went wrong.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import {
  C2paReaderUnavailableError,
  createManifestReader,
  type C2paReading,
  type ManifestReader,
} from '../src/adapters/c2pa/index.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const CA_JPG = readFileSync(`${SHARED_DIR}/fixtures/c2pa-rs/CA.jpg`);
const CRASHING_CHILD = new URL('./fixtures/crashing-reader-child.ts', import.meta.url);

function read(reader: ManifestReader, asset: Buffer, mimeType: string, timeoutMs?: number): Promise<C2paReading> {
  return reader.readManifest(
    { asset, mimeType, trustAnchorsPem: [], allowRemoteFetch: false },
    timeoutMs ? { timeoutMs } : {},
  );
}

async function withReader(
  options: Parameters<typeof createManifestReader>[0],
  use: (reader: ManifestReader) => Promise<void>,
): Promise<void> {
  const reader = createManifestReader(options);
  try {
    await use(reader);
  } finally {
    await reader.close();
  }
}

/**
 * Freezes the reader's only child (SIGSTOP), so a read handed to it is certainly in flight and goes unanswered,
 * as a parser stuck in native code would; answers its pid.
 */
async function freezeChild(reader: ManifestReader): Promise<number> {
  await reader.ready();
  const [pid] = reader.pids;
  if (pid === undefined) throw new Error('no child');
  process.kill(pid, 'SIGSTOP');
  return pid;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('C2PA reader crash isolation', () => {
  it('a child that crashes mid-read (SIGSEGV) → malformed; the pool replaces it and the next read works', async () => {
    await withReader({ size: 1, childEntry: CRASHING_CHILD }, async (reader) => {
      await reader.ready();
      const [pid] = reader.pids;
      const crashed = await read(reader, CA_JPG, 'application/x-cairn-crash');
      expect(crashed).toEqual({ kind: 'malformed', detail: 'reader process crashed (SIGSEGV)' });

      const next = await read(reader, CA_JPG, 'image/jpeg');
      expect(next.kind).toBe('manifest');
      expect(reader.pids).toHaveLength(1);
      expect(reader.pids[0]).not.toBe(pid);
    });
  });

  it('a child killed while reading → malformed, and the next read works', async () => {
    await withReader({ size: 1 }, async (reader) => {
      // Frozen, so the read is certainly in flight when it is killed.
      const pid = await freezeChild(reader);
      const pending = read(reader, CA_JPG, 'image/jpeg');
      await sleep(200);
      process.kill(pid, 'SIGKILL');
      expect(await pending).toEqual({ kind: 'malformed', detail: 'reader process crashed (SIGKILL)' });
      expect((await read(reader, CA_JPG, 'image/jpeg')).kind).toBe('manifest');
    });
  });

  it('a hung child is killed at the budget → malformed "timed out", and the next read works', async () => {
    await withReader({ size: 1, timeoutMs: 300 }, async (reader) => {
      const pid = await freezeChild(reader); // stands in for a parser stuck in native code
      expect(await read(reader, CA_JPG, 'image/jpeg')).toEqual({ kind: 'malformed', detail: 'timed out after 300 ms' });
      expect(reader.pids).not.toContain(pid);
      expect((await read(reader, CA_JPG, 'image/jpeg')).kind).toBe('manifest');
    });
  });

  it('reads queued behind a busy child wait their turn', async () => {
    await withReader({ size: 1 }, async (reader) => {
      await reader.ready();
      const results = await Promise.all(Array.from({ length: 5 }, () => read(reader, CA_JPG, 'image/jpeg')));
      expect(results.map((r) => r.kind)).toEqual(Array(5).fill('manifest'));
    });
  });

  it('a queued read’s budget starts at hand-over, not while it waits', async () => {
    await withReader({ size: 1 }, async (reader) => {
      await freezeChild(reader);
      // The first read holds the only child until its 4000 ms budget kills it; the second waits at least that
      // long in the queue, longer than its own 3000 ms budget. Counted from enqueue it would time out unread;
      // counted from hand-over it gets a fresh child and the whole budget.
      const first = read(reader, CA_JPG, 'image/jpeg', 4000);
      const second = read(reader, CA_JPG, 'image/jpeg', 3000);
      expect(await first).toEqual({ kind: 'malformed', detail: 'timed out after 4000 ms' });
      expect((await second).kind).toBe('manifest');
    });
  }, 30_000);

  it('children that cannot start → C2paReaderUnavailableError (an outage, not a verdict on the file)', async () => {
    await withReader(
      { size: 1, childEntry: new URL('./fixtures/failing-reader-child.ts', import.meta.url) },
      async (reader) => {
        await expect(reader.ready()).rejects.toBeInstanceOf(C2paReaderUnavailableError);
        await expect(read(reader, CA_JPG, 'image/jpeg')).rejects.toBeInstanceOf(C2paReaderUnavailableError);
      },
    );
  });

  it('a missing child entry (a bundle built without it) fails at construction', () => {
    expect(() => createManifestReader({ childEntry: new URL('./fixtures/no-such-child.js', import.meta.url) })).toThrow(
      /reader child not found/,
    );
  });

  it('a type c2pa-rs has no parser for → unsupported', async () => {
    await withReader({ size: 1 }, async (reader) => {
      const ogg = Buffer.concat([Buffer.from('OggS', 'latin1'), Buffer.alloc(64)]);
      expect(await read(reader, ogg, 'audio/ogg')).toEqual({ kind: 'unsupported', mimeType: 'audio/ogg' });
    });
  });

  it('closing the reader fails the read in flight as an outage, not as a verdict', async () => {
    const reader = createManifestReader({ size: 1 });
    await freezeChild(reader);
    const outcome = expect(read(reader, CA_JPG, 'image/jpeg')).rejects.toBeInstanceOf(C2paReaderUnavailableError);
    await sleep(100);
    await reader.close();
    await outcome;
  });

  it('a closed reader refuses new reads', async () => {
    const reader = createManifestReader({ size: 1 });
    await reader.close();
    await expect(read(reader, CA_JPG, 'image/jpeg')).rejects.toBeInstanceOf(C2paReaderUnavailableError);
  });
});
