import { eq } from 'drizzle-orm';
import type { Redis } from 'ioredis';
import type { Database } from '@cairn/db';
import { results } from '../db/schema.js';
import type { Verdict } from '../domain/verdict.js';

export type StoredResult = Omit<Verdict, 'matches'> & { manifest_id: string; asset_id: string; verified_at: string };

/** The latest public verdict per manifest: Postgres for durability, Redis in front until the manifest expires. */
export class ResultStore {
  constructor(
    private readonly db: Database,
    private readonly redis: Redis,
  ) {}

  private key(manifestId: string): string {
    return `verify:result:${manifestId}`;
  }

  async save(result: StoredResult, expiresAt: Date): Promise<void> {
    await this.db
      .insert(results)
      .values({ manifestId: result.manifest_id, assetId: result.asset_id, result, verifiedAt: new Date(result.verified_at), expiresAt })
      .onConflictDoUpdate({ target: results.manifestId, set: { result, verifiedAt: new Date(result.verified_at), expiresAt } });
    const ttl = Math.floor((expiresAt.getTime() - Date.now()) / 1000);
    if (ttl > 0) await this.redis.set(this.key(result.manifest_id), JSON.stringify(result), 'EX', ttl);
  }

  async get(manifestId: string): Promise<StoredResult | null> {
    const cached = await this.redis.get(this.key(manifestId));
    if (cached) return JSON.parse(cached) as StoredResult;
    const [row] = await this.db.select().from(results).where(eq(results.manifestId, manifestId));
    if (!row || row.expiresAt.getTime() <= Date.now()) return null;
    const result = row.result as StoredResult;
    const ttl = Math.floor((row.expiresAt.getTime() - Date.now()) / 1000);
    if (ttl > 0) await this.redis.set(this.key(manifestId), JSON.stringify(result), 'EX', ttl);
    return result;
  }
}
