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
