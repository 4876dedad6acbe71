import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createImageWatermark } from '../src/domain/image/cairn-dct-v1.js';
import { ImageRejectedError, type RawImage } from '../src/domain/image/raw-image.js';
import { payloadFor } from '../src/domain/payload.js';
import { ImageWorkerPool, PoolClosedError } from '../src/adapters/worker-pool.js';
import { loadPhoto } from './support/images.js';

const payload = payloadFor('w_01JD3M4X5Y6Z7A8B9C0D1E2F3G');

/** A photo-like image of any size, in a buffer of its own (so the pool may take it over). */
function gradientImage(width: number, height: number): RawImage {
  const pixels = new Uint8Array(width * height * 3);
  for (let y = 0, p = 0; y < height; y++) {
    for (let x = 0; x < width; x++, p += 3) {
      pixels[p] = (x * 255) / width;
      pixels[p + 1] = (y * 255) / height;
      pixels[p + 2] = ((x ^ y) & 63) + 96;
    }
  }
  return { pixels, width, height, channels: 3 };
}

/** The scheduling priority (nice) of each thread of this process, from Linux's /proc. */
function threadNiceValues(): number[] {
  return readdirSync('/proc/self/task').map((task) => {
    const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
    // Fields after the command name's closing parenthesis start at field 3 (state); nice is field 19.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

let pool: ImageWorkerPool;

beforeAll(async () => {
  pool = new ImageWorkerPool({ size: 1 });
  await pool.ready();
});

afterAll(async () => {
  await pool.close();
});

describe('image worker pool', () => {
  it('embeds and detects in a worker exactly as in-process', async () => {
    const photo = await loadPhoto('coffee.png');
    const expected = createImageWatermark().embed(photo, payload);
    // A view into a larger buffer is copied, never detached: the caller keeps it.
    const view = new Uint8Array(photo.pixels.length + 16);
    view.set(photo.pixels, 8);
    const input = { ...photo, pixels: view.subarray(8, 8 + photo.pixels.length) };
    const outcome = await pool.embed(input, payload);
    expect(input.pixels.byteLength).toBe(photo.pixels.length);
    expect(outcome.algorithm).toBe('cairn-dct-v1');
    expect(outcome.psnrDb).toBeGreaterThanOrEqual(38);
    expect(Buffer.from(outcome.image.pixels).equals(Buffer.from(expected.pixels))).toBe(true);
    const { detection } = await pool.detect(outcome.image);
    expect(detection?.payload).toEqual(payload);
  });

  it('hands over a buffer that is exactly its view instead of copying it', async () => {
    const image = gradientImage(300, 300);
    await pool.detect(image);
    expect(image.pixels.byteLength).toBe(0); // transferred: detached on this side
  });

  it('reports a refused image as ImageRejectedError', async () => {
    await expect(pool.embed(gradientImage(200, 300), payload)).rejects.toThrow(ImageRejectedError);
    await expect(pool.embed(gradientImage(200, 300), payload)).rejects.toThrow('needs at least 256×256');
  });

  it('answers pings on the main thread while a 3000×3000 embed runs', async () => {
    // A loopback HTTP server stands in for the service's health probe and gRPC calls: each ping needs the event
    // loop. Counted by order of completion, not time: pings sent after the embed was handed over and answered
    // before it finished. Run on the main thread, the embed would hold the loop until it was done: none would.
    const server = createServer((_req, res) => res.end('pong'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      let done = false;
      const embedding = pool.embed(gradientImage(3000, 3000), payload).finally(() => (done = true));
      let answeredWhileEmbedding = 0;
      while (!done) {
        const pong = await (await fetch(url)).text();
        if (!done && pong === 'pong') answeredWhileEmbedding++;
      }
      expect((await embedding).image.width).toBe(3000);
      expect(answeredWhileEmbedding).toBeGreaterThanOrEqual(2);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('runs background detections on one worker at the lowest priority, with the answer a foreground one gives', async () => {
    const photo = await loadPhoto('coffee.png');
    const marked = (await pool.embed(photo, payload)).image;
    const copy = (): RawImage => ({ ...marked, pixels: marked.pixels.slice() });
    const [foreground, background] = await Promise.all([
      pool.detect(copy()),
      pool.detect(copy(), [], undefined, 'background'),
    ]);
    expect(background.detection?.payload).toEqual(payload);
    expect(background).toEqual(foreground);
    // Of this process's threads, exactly one runs at nice 19: the pool's background worker.
    expect(threadNiceValues().filter((nice) => nice === 19)).toHaveLength(1);
  });

  it('runs an embed while background detections wait, instead of queueing it behind them', async () => {
    const key = { kid: 'k_pool_test', secret: new Uint8Array(32).fill(9) };
    const photo = await loadPhoto('coffee.png');
    const copy = (): RawImage => ({ ...photo, pixels: photo.pixels.slice() });
    const finished: string[] = [];
    // Keyed detections of an unmarked photo: every algorithm's full search, the slowest detection there is.
    const backgrounds = [1, 2, 3].map((n) =>
      pool.detect(copy(), [key], undefined, 'background').then(() => finished.push(`background ${n}`)),
    );
    const embed = pool.embed(copy(), payload).then(() => finished.push('embed'));
    await Promise.all([...backgrounds, embed]);
    // One queue for both would have run the embed last (the pool has one foreground worker, and the detections
    // came first); the background lane runs its own one at a time.
    expect(finished.indexOf('embed')).toBeLessThan(finished.indexOf('background 3'));
    expect(pool.pending).toBe(0);
  });

  it('queues work beyond its size and answers every task', async () => {
    const images = [0, 1, 2, 3].map(() => gradientImage(256, 256));
    const outcomes = await Promise.all(images.map((image) => pool.embed(image, payload)));
    expect(outcomes.map((o) => o.image.width)).toEqual([256, 256, 256, 256]);
    expect(pool.pending).toBe(0);
  });
});

describe('image worker pool failures', () => {
  it('fails the task of a worker that dies, and replaces the worker for the next task', async () => {
    // Every worker of this pool exits on its first task. The second task is answered (not left queued
    // forever) only because the pool starts a new worker for it.
    const crashing = new ImageWorkerPool({
      size: 1,
      entry: { code: `require('node:worker_threads').parentPort.once('message', () => process.exit(3));`, eval: true },
    });
    try {
      await expect(crashing.detect(gradientImage(256, 256))).rejects.toThrow('image worker exited with code 3');
      await expect(crashing.detect(gradientImage(256, 256))).rejects.toThrow('image worker exited with code 3');
    } finally {
      await crashing.close();
    }
  });

  it('drains accepted work on close, then refuses new work', async () => {
    const draining = new ImageWorkerPool({ size: 1 });
    const accepted = draining.embed(gradientImage(512, 512), payload);
    const closed = draining.close(10_000);
    await expect(draining.detect(gradientImage(256, 256))).rejects.toThrow(PoolClosedError);
    expect((await accepted).image.width).toBe(512);
    await closed;
  });
});
