import { Transform, type TransformCallback } from 'node:stream';

/**
 * Passes exactly `expected` bytes and fails otherwise. A download announces its Content-Length; a blob that ends
 * early (truncated, an object store cutting the stream) would leave a keep-alive client waiting for bytes that never
 * come, and one that runs long would corrupt the next response on the connection. Failing the stream makes the
 * response pipeline destroy the connection instead, which the client sees as a cut-off body.
 */
export function exactLength(expected: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) {
      seen += chunk.length;
      if (seen > expected) return done(new Error(`blob longer than its recorded ${expected} bytes`));
      done(null, chunk);
    },
    flush(done: TransformCallback) {
      done(seen === expected ? null : new Error(`blob ended after ${seen} of its recorded ${expected} bytes`));
    },
  });
}
