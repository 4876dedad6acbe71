import type { AuthenticatedKey } from '../adapters/tenant-directory.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** req_ + ULID, echoed in X-Request-Id and every problem body. */
      requestId: string;
      /** Set by the authenticate middleware. */
      auth?: AuthenticatedKey;
    }
  }
}

export {};
