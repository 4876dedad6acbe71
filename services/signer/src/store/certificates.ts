import { and, asc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import type { Database, Tx } from '@cairn/db';
import type { ActiveRows, CertificateRecords, CertificateStatusRow } from '../app/ports.js';
import { certificates, type CertificateRole, type CertificateRow } from '../db/pki-schema.js';

/** One advisory lock for every change to the hierarchy: replicas starting together create one root. */
const PKI_LOCK = 'cairn.signer.pki';

/** All SQL of the CA: `signer.certificates` (keys sealed or on the HSM, certificates, their states). */
export class CertificateStore implements CertificateRecords {
  constructor(private readonly db: Database) {}

  /** Runs `fn` in a transaction holding the hierarchy's advisory lock (callers re-read state inside it). */
  async locked<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${PKI_LOCK}))`);
      return fn(tx);
    });
  }

  /** A plain transaction (no hierarchy lock). */
  async transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  async activeRows(tx?: Tx): Promise<ActiveRows> {
    const rows = await (tx ?? this.db).select().from(certificates).where(eq(certificates.status, 'active'));
    const byRole = (role: CertificateRole) => rows.find((r) => r.role === role);
    const root = byRole('root');
    const intermediate = byRole('intermediate');
    const signing = byRole('signing');
    const ocspResponder = byRole('ocsp_responder');
    const tsa = byRole('tsa');
    return {
      ...(root ? { root } : {}),
      ...(intermediate ? { intermediate } : {}),
      ...(signing ? { signing } : {}),
      ...(ocspResponder ? { ocspResponder } : {}),
      ...(tsa ? { tsa } : {}),
    };
  }

  /** The active signing certificate; with `tx`, locked for update. */
  async activeSigning(tx?: Tx): Promise<CertificateRow | undefined> {
    const where = and(eq(certificates.role, 'signing'), eq(certificates.status, 'active'));
    const [row] = tx
      ? await tx.select().from(certificates).where(where).for('update')
      : await this.db.select().from(certificates).where(where);
    return row;
  }

  /** A certificate by its serial (lower-case hex); with `tx`, locked for update. */
  async bySerial(serialHex: string, tx?: Tx): Promise<CertificateRow | undefined> {
    const where = eq(certificates.serialHex, serialHex);
    const [row] = tx
      ? await tx.select().from(certificates).where(where).for('update')
      : await this.db.select().from(certificates).where(where);
    return row;
  }

  async list(roles: readonly CertificateRole[]): Promise<CertificateRow[]> {
    return this.db
      .select()
      .from(certificates)
      .where(inArray(certificates.role, [...roles]))
      .orderBy(asc(certificates.createdAt));
  }

  async nextSequence(tx: Tx, role: CertificateRole): Promise<number> {
    const seq = await tx.execute<{ n: number }>(
      sql`select coalesce(max(${certificates.sequence}), 0)::int + 1 as n from ${certificates} where ${certificates.role} = ${role}`,
    );
    return seq.rows[0]?.n ?? 1;
  }

  async insert(tx: Tx, values: typeof certificates.$inferInsert): Promise<CertificateRow> {
    const [row] = await tx.insert(certificates).values(values).returning();
    if (!row) throw new Error('insert returned no row');
    return row;
  }

  async markRevoked(tx: Tx, serialHex: string, now: Date, reason: string): Promise<CertificateRow> {
    const [row] = await tx
      .update(certificates)
      .set({ status: 'revoked', revokedAt: now, revocationReason: reason })
      .where(eq(certificates.serialHex, serialHex))
      .returning();
    if (!row) throw new Error('update returned no row');
    return row;
  }

  /** Retires a certificate (it stays valid, no longer used for new work). */
  async retire(tx: Tx, serialHex: string, now: Date): Promise<CertificateRow | undefined> {
    const [row] = await tx
      .update(certificates)
      .set({ status: 'retired', retiredAt: now })
      .where(eq(certificates.serialHex, serialHex))
      .returning();
    return row;
  }

  /** Active signing certificates ending by `horizon` and not announced yet, locked (SKIP LOCKED), soonest first. */
  async expiringUnannounced(tx: Tx, horizon: Date): Promise<CertificateRow[]> {
    return tx
      .select()
      .from(certificates)
      .where(
        and(
          eq(certificates.role, 'signing'),
          eq(certificates.status, 'active'),
          isNull(certificates.expiringNotifiedAt),
          lte(certificates.notAfter, horizon),
        ),
      )
      .orderBy(asc(certificates.notAfter))
      .for('update', { skipLocked: true });
  }

  async markExpiringAnnounced(tx: Tx, serialHex: string, now: Date): Promise<void> {
    await tx.update(certificates).set({ expiringNotifiedAt: now }).where(eq(certificates.serialHex, serialHex));
  }

  /** The status of `serialHex` as issued by `issuerSerialHex` (the OCSP responder's question). */
  async statusOf(issuerSerialHex: string, serialHex: string): Promise<CertificateStatusRow | undefined> {
    const [row] = await this.db
      .select({
        status: certificates.status,
        revokedAt: certificates.revokedAt,
        reason: certificates.revocationReason,
      })
      .from(certificates)
      .where(and(eq(certificates.serialHex, serialHex), eq(certificates.issuerSerial, issuerSerialHex)));
    return row;
  }

  /** Intermediates that still answer OCSP (active first, then retired, oldest first) and the active responders. */
  async ocspIssuerRows(): Promise<{ intermediates: CertificateRow[]; responders: CertificateRow[] }> {
    const intermediates = await this.db
      .select()
      .from(certificates)
      .where(and(eq(certificates.role, 'intermediate'), inArray(certificates.status, ['active', 'retired'])))
      .orderBy(sql`${certificates.status} = 'active' desc`, asc(certificates.createdAt));
    const responders = await this.db
      .select()
      .from(certificates)
      .where(and(eq(certificates.role, 'ocsp_responder'), eq(certificates.status, 'active')));
    return { intermediates, responders };
  }
}
