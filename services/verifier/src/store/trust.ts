import { readFile } from 'node:fs/promises';
import { createHash, X509Certificate } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { withTenant, type Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { trustLists } from '../db/schema.js';

export interface TrustEntry {
  issuer_cn: string;
  certificate_pem: string;
}

const MAX_ENTRIES = 100;

/** Parses and checks a custom trust list: each entry one PEM certificate, not expired, CN as named. */
export function validateTrustEntries(entries: TrustEntry[]): TrustEntry[] {
  if (entries.length === 0 || entries.length > MAX_ENTRIES) throw new CairnError('cairn.validation.invalid_body', `entries must hold 1 to ${MAX_ENTRIES} certificates.`);
  return entries.map((entry, index) => {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(entry.certificate_pem);
    } catch {
      throw new CairnError('cairn.validation.invalid_body', `entries.${index}.certificate_pem is not a PEM certificate.`, { errors: [{ path: `entries.${index}.certificate_pem`, message: 'not a PEM certificate' }] });
    }
    if (new Date(cert.validTo).getTime() < Date.now()) {
      throw new CairnError('cairn.validation.invalid_body', `entries.${index}: the certificate expired on ${cert.validTo}.`, { errors: [{ path: `entries.${index}.certificate_pem`, message: 'expired' }] });
    }
    return { issuer_cn: entry.issuer_cn, certificate_pem: cert.toString() };
  });
}

/**
 * The trust list in force for a verification: an enterprise tenant's own list when it set one, else the
 * default (Cairn's root plus the configured C2PA trust anchors).
 */
export class TrustLists {
  private defaults: { pems: string[]; cairn: string[]; digest: string; loadedAt: number } | undefined;

  constructor(
    private readonly db: Database,
    private readonly loadCairnRoots: () => Promise<string[]>,
    private readonly anchorsFile: string | undefined,
  ) {}

  async forTenant(tenantId: string | undefined): Promise<{ pems: string[]; source: 'default' | 'custom' }> {
    if (tenantId) {
      const custom = await withTenant(this.db, tenantId, async (tx) => (await tx.select().from(trustLists).where(eq(trustLists.tenantId, tenantId)))[0]);
      if (custom) return { pems: custom.entries.map((e) => e.certificate_pem), source: 'custom' };
    }
    return { pems: await this.defaultPems(), source: 'default' };
  }

  async set(tenantId: string, entries: TrustEntry[]): Promise<{ count: number; updatedAt: Date }> {
    const valid = validateTrustEntries(entries);
    const updatedAt = new Date();
    await withTenant(this.db, tenantId, (tx) =>
      tx.insert(trustLists).values({ tenantId, entries: valid, updatedAt }).onConflictDoUpdate({ target: trustLists.tenantId, set: { entries: valid, updatedAt } }),
    );
    return { count: valid.length, updatedAt };
  }

  /** Cairn's own roots: the only chains under which a manifest can name a Cairn asset. */
  async cairnRoots(): Promise<string[]> {
    return (await this.loadDefaults()).cairn;
  }

  /** SHA-256 of the default list: a stored verdict computed under another list is recomputed. */
  async defaultDigest(): Promise<string> {
    return (await this.loadDefaults()).digest;
  }

  private async defaultPems(): Promise<string[]> {
    return (await this.loadDefaults()).pems;
  }

  private async loadDefaults(): Promise<{ pems: string[]; cairn: string[]; digest: string; loadedAt: number }> {
    if (this.defaults && Date.now() - this.defaults.loadedAt < 60_000) return this.defaults;
    const configured = this.anchorsFile ? splitPem(await readFile(this.anchorsFile, 'utf8')) : [];
    const cairn = await this.loadCairnRoots();
    const pems = [...cairn, ...configured];
    const digest = createHash('sha256').update(pems.map((p) => p.trim()).sort().join('\n')).digest('hex');
    this.defaults = { pems, cairn, digest, loadedAt: Date.now() };
    return this.defaults;
  }
}

export function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}
