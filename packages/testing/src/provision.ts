import pg from 'pg';
import { dropDatabase, ensureAppRole } from './provisioning.js';
import { APP_ROLE, PG_ADMIN_URL, TEST_DB_PREFIX } from './env.js';

/**
 * Once per jest run: the app role exists, and sandboxes that crashed runs left behind (older than two hours,
 * so a concurrent run's are never touched) are dropped.
 */
export async function provision(): Promise<void> {
  await ensureAppRole(PG_ADMIN_URL, APP_ROLE);
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  const doomed: string[] = [];
  try {
    const stale = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [
      `${TEST_DB_PREFIX}%`,
    ]);
    const cutoff = Date.now() - 2 * 3600 * 1000;
    for (const { datname } of stale.rows) {
      const created = parseInt(datname.slice(TEST_DB_PREFIX.length).split('_')[0] ?? '', 36);
      if (Number.isFinite(created) && created < cutoff) doomed.push(datname);
    }
  } finally {
    await client.end();
  }
  for (const name of doomed) await dropDatabase(PG_ADMIN_URL, name);
}
