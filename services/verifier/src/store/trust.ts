import { readFile } from 'node:fs/promises';
import { createHash, X509Certificate } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { withTenant, type Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { trustLists } from '../db/schema.js';
import { splitPem } from '../adapters/trust-sources.js';

export interface TrustEntry {
  issuer_cn: string;
  certificate_pem: string;
}

const MAX_ENTRIES = 100;

/** Parses and checks a custom trust list: each entry one PEM certificate, not expired, CN as named. */
export function validateTrustEntries(entries: TrustEntry[]): TrustEntry[] {
  if (entries.length === 0 || entries.length > MAX_ENTRIES)
    throw new CairnError('cairn.validation.invalid_body', `entries must hold 1 to ${MAX_ENTRIES} certificates.`);
  return entries.map((entry, index) => {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(entry.certificate_pem);
    } catch {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `entries.${index}.certificate_pem is not a PEM certificate.`,
        { errors: [{ path: `entries.${index}.certificate_pem`, message: 'not a PEM certificate' }] },
      );
    }
    if (new Date(cert.validTo).getTime() < Date.now()) {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `entries.${index}: the certificate expired on ${cert.validTo}.`,
        { errors: [{ path: `entries.${index}.certificate_pem`, message: 'expired' }] },
      );
    }
    return { issuer_cn: entry.issuer_cn, certificate_pem: cert.toString() };
  });
}

/** Why a certificate is on the default list. */
export type TrustOrigin = 'cairn' | 'c2pa' | 'c2pa_tsa' | 'configured';

export interface DefaultTrustList {
  entries: Array<{ pem: string; origin: TrustOrigin }>;
  pems: string[];
  cairn: string[];
  /** SHA-256 over the whole list: a stored verdict computed under another list is recomputed. */
  digest: string;
  /** Where each published list was read from. */
  sources: { c2pa: string; tsa: string };
}

export interface PublishedList {
  pems(): Promise<string[]>;
  origin(): string;
}

/**
 * The trust list in force for a verification: an enterprise tenant's own list when it set one, else the default —
 * Cairn's root, the C2PA Trust List and its TSA Trust List (shipped, or from a configured file or URL), and the
 * anchors of TRUST_ANCHORS_FILE. c2pa-rs 0.90 has one anchor store for signatures and time-stamps alike, so the TSA
 * roots are anchors for both; its EKU rules keep a time-stamping certificate from passing as a signer.
 */
export class TrustLists {
  private roots: { pems: string[]; loadedAt: number } | undefined;

  constructor(
    private readonly db: Database,
    private readonly loadCairnRoots: () => Promise<string[]>,
    private readonly published: { c2pa: PublishedList; tsa: PublishedList },
    private readonly anchorsFile: string | undefined,
  ) {}

  async forTenant(tenantId: string | undefined): Promise<{ pems: string[]; source: 'default' | 'custom' }> {
    const custom = await this.custom(tenantId);
    if (custom) return { pems: custom.map((e) => e.certificate_pem), source: 'custom' };
    return { pems: (await this.loadDefaults()).pems, source: 'default' };
  }

  /** The tenant's own list, if it set one. */
  async custom(tenantId: string | undefined): Promise<TrustEntry[] | undefined> {
    if (!tenantId) return undefined;
    const row = await withTenant(
      this.db,
      tenantId,
      async (tx) => (await tx.select().from(trustLists).where(eq(trustLists.tenantId, tenantId)))[0],
    );
    return row?.entries;
  }

  async set(tenantId: string, entries: TrustEntry[]): Promise<{ count: number; updatedAt: Date }> {
    const valid = validateTrustEntries(entries);
    const updatedAt = new Date();
    await withTenant(this.db, tenantId, (tx) =>
      tx
        .insert(trustLists)
        .values({ tenantId, entries: valid, updatedAt })
        .onConflictDoUpdate({ target: trustLists.tenantId, set: { entries: valid, updatedAt } }),
    );
    return { count: valid.length, updatedAt };
  }

  /** Cairn's own roots: the only chains under which a manifest can name a Cairn asset. */
  async cairnRoots(): Promise<string[]> {
    return (await this.loadDefaults()).cairn;
  }

  async defaultDigest(): Promise<string> {
    return (await this.loadDefaults()).digest;
  }

  async defaultList(): Promise<DefaultTrustList> {
    return this.loadDefaults();
  }

  /** Assembled on every call from sources that cache themselves, so a refreshed published list is in force at once. */
  private async loadDefaults(): Promise<DefaultTrustList> {
    const [cairn, c2pa, tsa, configured] = await Promise.all([
      this.cairnRootsCached(),
      this.published.c2pa.pems(),
      this.published.tsa.pems(),
      this.anchorsFile ? readFile(this.anchorsFile, 'utf8').then(splitPem) : Promise.resolve([]),
    ]);
    const entries: DefaultTrustList['entries'] = [];
    const seen = new Set<string>();
    const add = (pems: string[], origin: TrustOrigin) => {
      for (const pem of pems) {
        const key = pem.replace(/\s+/g, '');
        if (seen.has(key)) continue;
        seen.add(key);
        entries.push({ pem, origin });
      }
    };
    add(cairn, 'cairn');
    add(c2pa, 'c2pa');
    add(tsa, 'c2pa_tsa');
    add(configured, 'configured');
    const pems = entries.map((e) => e.pem);
    const digest = createHash('sha256')
      .update(
        pems
          .map((p) => p.trim())
          .sort()
          .join('\n'),
      )
      .digest('hex');
    return {
      entries,
      pems,
      cairn,
      digest,
      sources: { c2pa: this.published.c2pa.origin(), tsa: this.published.tsa.origin() },
    };
  }

  private async cairnRootsCached(): Promise<string[]> {
    if (!this.roots || Date.now() - this.roots.loadedAt >= 60_000)
      this.roots = { pems: await this.loadCairnRoots(), loadedAt: Date.now() };
    return this.roots.pems;
  }
}
