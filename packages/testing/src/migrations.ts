import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A drizzle migrations folder in a temporary directory, one migration per entry of `migrations` (its SQL, statements
 * separated by `--> statement-breakpoint`); none gives an empty journal. For tests of the migration runner, and of a
 * service that needs a table or two but none of a real service's schema.
 */
export async function writeMigrations(migrations: readonly string[] = []): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'cairn-mig-'));
  await mkdir(join(folder, 'meta'));
  const entries = migrations.map((_, idx) => ({
    idx,
    version: '7',
    // drizzle applies a migration newer than the last one recorded: the order given, from the start of time.
    when: idx + 1,
    tag: `${String(idx).padStart(4, '0')}_test`,
    breakpoints: true,
  }));
  for (const [idx, text] of migrations.entries()) await writeFile(join(folder, `${entries[idx]!.tag}.sql`), text);
  await writeFile(
    join(folder, 'meta', '_journal.json'),
    JSON.stringify({ version: '7', dialect: 'postgresql', entries }),
  );
  return folder;
}
