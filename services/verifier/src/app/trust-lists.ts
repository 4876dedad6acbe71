import { createHash, X509Certificate } from 'node:crypto';
import type { Tx } from '@cairn/db';
import { newEvent, type AnyEvent } from '@cairn/events';
import { validateTrustEntries, type TrustEntry } from '../domain/trust-entries.js';

/** A tenant's own trust list, as kept (store/trust.ts). */
export interface TrustListRows {
  get(tenantId: string): Promise<TrustEntry[] | undefined>;
  put(
    tenantId: string,
    entries: TrustEntry[],
    updatedAt: Date,
    alsoInTx: (tx: Tx, before: TrustEntry[] | undefined) => Promise<void>,
  ): Promise<void>;
  remove(tenantId: string, alsoInTx: (tx: Tx, before: TrustEntry[]) => Promise<void>): Promise<void>;
}

/** Where an admin change's audit event goes: the verifier's outbox, in the transaction of the change. */
export interface AdminAuditOutbox {
  enqueue(tx: Tx, event: AnyEvent): Promise<void>;
  flush(): Promise<void>;
}

/** A trust list as its audit entry shows it: each certificate's issuer name and SHA-256 fingerprint. */
function listSettings(entries: TrustEntry[]): Record<string, unknown> {
  return {
    count: entries.length,
    certificates: entries.map((e) => ({
      issuer_cn: e.issuer_cn,
      sha256_fingerprint: fingerprintOf(e.certificate_pem),
    })),
  };
}

function fingerprintOf(pem: string): string {
  try {
    return new X509Certificate(pem).fingerprint256.replaceAll(':', '').toLowerCase();
  } catch {
    return createHash('sha256').update(pem).digest('hex');
  }
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
  /** The default list as last assembled, and what it was assembled from. */
  private assembled: { inputs: string[][]; list: DefaultTrustList } | undefined;

  constructor(
    private readonly rows: TrustListRows,
    private readonly loadCairnRoots: () => Promise<string[]>,
    private readonly published: { c2pa: PublishedList; tsa: PublishedList },
    /** The anchors of TRUST_ANCHORS_FILE, read on each call (adapters/trust-sources.ts). */
    private readonly configured: () => Promise<string[]>,
    /** Every change of a tenant's own list leaves an admin.changed audit event in its transaction. */
    private readonly outbox: AdminAuditOutbox,
  ) {}

  async forTenant(tenantId: string | undefined): Promise<{ pems: string[]; source: 'default' | 'custom' }> {
    const custom = await this.custom(tenantId);
    if (custom) return { pems: custom.map((e) => e.certificate_pem), source: 'custom' };
    return { pems: (await this.loadDefaults()).pems, source: 'default' };
  }

  /** The tenant's own list, if it set one. */
  async custom(tenantId: string | undefined): Promise<TrustEntry[] | undefined> {
    if (!tenantId) return undefined;
    return this.rows.get(tenantId);
  }

  /** Replaces the tenant's own list; no entries removes it, so its verifies use the default list again. */
  async set(
    tenantId: string,
    entries: TrustEntry[],
    actorKeyId: string | null = null,
  ): Promise<{ count: number; updatedAt: Date }> {
    const updatedAt = new Date();
    const audit = (
      tx: Tx,
      action: 'trust_list.set' | 'trust_list.deleted',
      before?: TrustEntry[],
      after?: TrustEntry[],
    ) =>
      this.outbox.enqueue(
        tx,
        newEvent('admin.changed', tenantId, {
          action,
          object_type: 'trust_list',
          object_id: tenantId,
          actor_key_id: actorKeyId,
          before: before ? listSettings(before) : null,
          after: after ? listSettings(after) : null,
        }),
      );
    if (entries.length === 0) {
      await this.rows.remove(tenantId, (tx, before) => audit(tx, 'trust_list.deleted', before));
      void this.outbox.flush();
      return { count: 0, updatedAt };
    }
    const valid = validateTrustEntries(entries);
    await this.rows.put(tenantId, valid, updatedAt, (tx, before) => audit(tx, 'trust_list.set', before, valid));
    void this.outbox.flush();
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

  /**
   * Assembled from sources that cache themselves, so a refreshed published list is in force at once. A verify asks
   * for it three or four times, and assembling it (whitespace-blind de-duplication and the digest over some 50
   * certificates) is redone only when a source answered something else than the last time.
   */
  private async loadDefaults(): Promise<DefaultTrustList> {
    const [cairn, c2pa, tsa, configured] = await Promise.all([
      this.cairnRootsCached(),
      this.published.c2pa.pems(),
      this.published.tsa.pems(),
      this.configured(),
    ]);
    const inputs = [cairn, c2pa, tsa, configured, [this.published.c2pa.origin(), this.published.tsa.origin()]];
    const last = this.assembled;
    if (last && inputs.every((list, i) => sameStrings(list, last.inputs[i] ?? []))) return last.list;
    const list = this.assemble(cairn, c2pa, tsa, configured);
    this.assembled = { inputs, list };
    return list;
  }

  private assemble(cairn: string[], c2pa: string[], tsa: string[], configured: string[]): DefaultTrustList {
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

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((value, i) => value === b[i]));
}
