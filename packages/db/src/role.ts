import type pg from 'pg';

/** What start-up learns about the role a service connects as. */
export interface DatabaseRole {
  name: string;
  superuser: boolean;
  bypassRls: boolean;
}

export async function currentRole(pool: pg.Pool): Promise<DatabaseRole> {
  const result = await pool.query<{ rolname: string; rolsuper: boolean; rolbypassrls: boolean }>(
    'select rolname, rolsuper, rolbypassrls from pg_roles where rolname = current_user',
  );
  const row = result.rows[0];
  if (!row) throw new Error('the current database role is not in pg_roles');
  return { name: row.rolname, superuser: row.rolsuper, bypassRls: row.rolbypassrls };
}

/**
 * Refuses a role for which row-level security is silently off: a superuser or BYPASSRLS role reads every
 * tenant's rows whatever the policies say, so a service started with one would look healthy while isolating
 * nothing. Returns the role's name when it is fit to serve.
 */
export async function assertRlsSubjectRole(pool: pg.Pool): Promise<string> {
  const role = await currentRole(pool);
  const powers = [role.superuser ? 'SUPERUSER' : undefined, role.bypassRls ? 'BYPASSRLS' : undefined].filter(Boolean);
  if (powers.length) {
    throw new Error(
      `database role "${role.name}" has ${powers.join(' and ')}, which skips row-level security: connect as the service's own role (cairn_<service>, see README "Service identities")`,
    );
  }
  return role.name;
}
