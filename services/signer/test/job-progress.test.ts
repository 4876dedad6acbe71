import { describe, expect, it } from '@jest/globals';
import { JobProgressWriter } from '../src/app/job-progress.js';
import type { StoredJobProgress } from '../src/db/assets-schema.js';

/** A writer whose writes are recorded; `release` lets the write in flight finish. */
function recording(intervalMs: number) {
  const writes: StoredJobProgress[] = [];
  let release = () => {};
  const writer = new JobProgressWriter(
    (progress) => {
      writes.push(progress);
      return new Promise<void>((resolve) => (release = resolve));
    },
    (error) => {
      throw error;
    },
    intervalMs,
  );
  return { writes, writer, release: () => release() };
}

const turn = () => new Promise((r) => setTimeout(r, 0));

describe('JobProgressWriter: a sign job’s progress onto its row, bounded', () => {
  it('a burst of reports is one write of the latest, and nothing more until the interval passes', async () => {
    const { writes, writer, release } = recording(60_000);
    for (let frame = 1; frame <= 1000; frame++) writer.report('watermarking', frame / 1000);
    await turn();
    expect(writes.map((w) => [w.stage, w.fraction])).toEqual([['watermarking', 1]]);
    release();
    writer.report('signing', 1);
    await turn();
    expect(writes).toHaveLength(1);
    await writer.close();
    expect(writes).toHaveLength(1);
  });

  it('never lets the fraction fall within a run, and keeps it within 0..1', async () => {
    const { writes, writer, release } = recording(0);
    writer.report('watermarking', 0.6);
    await turn();
    release();
    await turn();
    writer.report('watermarking', 0.2);
    await turn();
    writer.report('signing', 7);
    await turn();
    release();
    await turn();
    writer.report('storing', Number.NaN);
    await turn();
    release();
    await writer.close();
    expect(writes.map((w) => [w.stage, w.fraction])).toEqual([
      ['watermarking', 0.6],
      ['signing', 1],
      ['storing', 1],
    ]);
  });

  it('writes nothing after close, though a report was pending', async () => {
    const { writes, writer, release } = recording(60_000);
    writer.report('reading', 0);
    await turn();
    writer.report('watermarking', 0.5);
    const closed = writer.close();
    release();
    await closed;
    writer.report('storing', 1);
    await turn();
    expect(writes.map((w) => w.stage)).toEqual(['reading']);
  });
});
