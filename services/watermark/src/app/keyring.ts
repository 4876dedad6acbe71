import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from '@cairn/logging';
import { Sealer } from '@cairn/sealing';
import { WATERMARK_KEY_BYTES } from '../domain/image/cairn-dct-keyed-v1.js';
import type { Keyring, WatermarkKey } from '../domain/keys.js';
import type { GeneratedKeys } from './ports.js';

/**
 * Seals development keys at rest. Like the signer's development KEK it is derived from a constant, so it keeps
 * a copied database dump from being readable at a glance, no more: production never generates keys, it
 * requires WATERMARK_KEYS.
 */
const DEVELOPMENT_KEK = createHash('sha256').update('cairn-development-watermark-kek').digest('hex');

const aad = (kid: string) => `watermark.generated_keys|${kid}`;

/**
 * The service's keys: WATERMARK_KEYS when configured (required in production), else in development the key
 * this database already holds, or a new random one stored sealed, so marks made before a restart stay
 * detectable after it.
 */
export async function resolveKeyring(options: {
  readonly env: 'development' | 'production';
  readonly configured: ReadonlyArray<WatermarkKey> | undefined;
  readonly store: GeneratedKeys;
  readonly logger: Logger;
}): Promise<Keyring> {
  const { env, configured, store, logger } = options;
  if (configured && configured.length > 0) return { current: configured[0]!, all: configured };
  if (env === 'production')
    throw new Error(
      'WATERMARK_KEYS is required in production (kid:hex,… with 64-hex-character keys; the first signs new marks).',
    );
  const sealer = new Sealer(DEVELOPMENT_KEK, 'the development watermark KEK');
  const rows = await store.loadOrCreate(() => {
    const kid = `dev-${randomBytes(4).toString('hex')}`;
    return { kid, sealedKey: sealer.seal(randomBytes(WATERMARK_KEY_BYTES).toString('hex'), aad(kid)) };
  });
  // Newest first: the latest generated key signs, older ones (none today) stay detectable.
  const keys = rows
    .map((row) => ({
      kid: row.kid,
      secret: Uint8Array.from(Buffer.from(sealer.open(row.sealedKey, aad(row.kid)), 'hex')),
    }))
    .reverse();
  logger.warn(
    { key_id: keys[0]!.kid },
    'WATERMARK_KEYS is not set: using the development watermark key kept sealed in the watermark schema',
  );
  return { current: keys[0]!, all: keys };
}
