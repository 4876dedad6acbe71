import pg from 'pg';

/**
 * Provisioning with a superuser connection (local fleet and tests). Services connect as `role`, which is
 * neither superuser nor BYPASSRLS, so row-level security applies to everything they do: a superuser would
 * silently skip every policy.
 */
export async function ensureAppRole(adminUrl: string, role: string): Promise<void> {
  assertIdentifier(role);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    // Two processes provisioning at once race on CREATE ROLE; the loser's duplicate error is fine.
    await client.query(`do $$ begin
      if not exists (select 1 from pg_roles where rolname = '${role}') then
        create role ${role} login nosuperuser nobypassrls nocreaterole;
      end if;
    exception when duplicate_object or unique_violation then null; end $$`);
  } finally {
    await client.end();
  }
}

export async function databaseExists(adminUrl: string, name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const result = await client.query('select 1 from pg_database where datname = $1', [name]);
    return result.rowCount === 1;
  } finally {
    await client.end();
  }
}

export async function createDatabase(adminUrl: string, name: string, owner: string): Promise<void> {
  assertIdentifier(name);
  assertIdentifier(owner);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${name} owner ${owner}`);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  assertIdentifier(name);
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists ${name} with (force)`);
  } finally {
    await client.end();
  }
}

/** Replaces the user and database of a connection URL (the app's URL derived from the admin's). */
export function databaseUrl(baseUrl: string, database: string, user?: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${database}`;
  if (user) {
    url.username = user;
    url.password = '';
  }
  return url.toString();
}

function assertIdentifier(value: string): void {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(value)) throw new Error(`Not a safe SQL identifier: ${value}`);
}

/** A service's schema and the role that owns it (packages/config databaseRole). */
export interface ServiceIdentity {
  schema: string;
  role: string;
}

/**
 * One role per service in `database` (owned by `owner`): each may connect and create its own schema (its
 * first migration does), keeps its migration journal in the shared `cairn_migrations` schema (created here
 * so no service owns it), and reads nothing another role owns. A database whose schemas an older fleet
 * created as one shared role is adopted: each schema and everything in it passes to its service's role.
 */
export async function provisionServiceRoles(
  adminUrl: string,
  database: string,
  owner: string,
  identities: ServiceIdentity[],
): Promise<void> {
  assertIdentifier(database);
  assertIdentifier(owner);
  for (const { schema, role } of identities) {
    assertIdentifier(schema);
    assertIdentifier(role);
  }
  for (const { role } of identities) await ensureAppRole(adminUrl, role);
  const client = new pg.Client({ connectionString: databaseUrl(adminUrl, database) });
  await client.connect();
  try {
    // Serialised with the services' own migration lock: a launcher and a test provisioning one database at once.
    await client.query("select pg_advisory_lock(hashtext('cairn.migrate'))");
    try {
      await client.query(`create schema if not exists cairn_migrations authorization ${owner}`);
      for (const { schema, role } of identities) {
        await client.query(`grant connect, create on database ${database} to ${role}`);
        await client.query(`grant usage, create on schema cairn_migrations to ${role}`);
        await adopt(client, schema, role);
      }
    } finally {
      await client.query("select pg_advisory_unlock(hashtext('cairn.migrate'))");
    }
  } finally {
    await client.end();
  }
}

async function adopt(client: pg.Client, schema: string, role: string): Promise<void> {
  const found = await client.query<{ owner: string }>(
    'select nspowner::regrole::text as owner from pg_namespace where nspname = $1',
    [schema],
  );
  const current = found.rows[0]?.owner;
  if (current === undefined || current === role) return;
  await client.query(`alter schema ${schema} owner to ${role}`);
  const owned = await client.query<{ name: string; kind: string }>(
    `select quote_ident(n.nspname) || '.' || quote_ident(c.relname) as name, c.relkind::text as kind
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where (n.nspname = $1 or (n.nspname = 'cairn_migrations' and c.relname = $1)) and c.relkind in ('r', 'p', 'S', 'v', 'm')
        -- a serial's sequence follows its table (and refuses a separate owner change)
        and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('a', 'i'))`,
    [schema],
  );
  const keyword: Record<string, string> = { r: 'table', p: 'table', S: 'sequence', v: 'view', m: 'materialized view' };
  for (const { name, kind } of owned.rows)
    await client.query(`alter ${keyword[kind] ?? 'table'} ${name} owner to ${role}`);
}
