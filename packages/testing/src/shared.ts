import { fileURLToPath } from 'node:url';

/**
 * The workplace's shared folder (fixtures, trust lists), found beside the repository as `../shared`, wherever the
 * repository is cloned; `CAIRN_SHARED_DIR` overrides it. No test or bench names an absolute path.
 */
export const SHARED_DIR = (
  process.env.CAIRN_SHARED_DIR ?? fileURLToPath(new URL('../../../../shared/', import.meta.url))
).replace(/\/$/, '');
