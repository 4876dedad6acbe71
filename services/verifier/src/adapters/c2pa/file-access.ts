// An asset on disk as random access (domain/c2pa/asset-store.ts walks it): the reader child reads only the
// container headers it needs, so a 100 MB video is never loaded whole.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type { RandomAccess } from '../../domain/c2pa/asset-store.js';

export function withFileAccess<T>(path: string, use: (access: RandomAccess) => T): T {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    return use({
      size,
      read(offset, length) {
        const n = Math.max(0, Math.min(length, size - offset));
        const out = Buffer.alloc(n);
        let done = 0;
        while (done < n) {
          const got = readSync(fd, out, done, n - done, offset + done);
          if (got === 0) break;
          done += got;
        }
        return out.subarray(0, done);
      },
    });
  } finally {
    closeSync(fd);
  }
}
