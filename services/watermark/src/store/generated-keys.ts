import { sql } from 'drizzle-orm';
import type { Database } from '@cairn/db';
import type { GeneratedKeys, SealedKey } from '../app/ports.js';
import { generatedKeys } from '../db/schema.js';

/** watermark.generated_keys: the development key the service made for itself, sealed. */
export class GeneratedKeyStore implements GeneratedKeys {
  constructor(private readonly db: Database) {}

  /**
   * The stored keys, oldest first; when there are none, `create()` is stored and returned. Replicas starting
   * together take a transaction lock first, so exactly one key is made and all of them use it.
   */
  async loadOrCreate(create: () => SealedKey): Promise<SealedKey[]> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext('watermark.generated_keys'))`);
      const rows = await tx
        .select({ kid: generatedKeys.kid, sealedKey: generatedKeys.sealedKey })
        .from(generatedKeys)
        .orderBy(generatedKeys.createdAt, generatedKeys.kid);
      if (rows.length > 0) return rows;
      const fresh = create();
      await tx.insert(generatedKeys).values(fresh);
      return [fresh];
    });
  }
}
