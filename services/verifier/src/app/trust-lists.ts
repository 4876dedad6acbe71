import { createHash, X509Certificate } from 'node:crypto';
import type { Tx } from '@cairn/db';
import { newEvent, type AnyEvent } from '@cairn/events';
import { validateTrustEntries, type TrustEntry } from '../domain/trust-entries.js';
import type { ListInForce, TrustListIdentity } from '../domain/trust-decision.js';

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
export type TrustOrigin = 'cairn' | 'c2pa' | 'c2pa_tsa' | 'interim' | 'configured';

export interface DefaultTrustList {
  entries: Array<{ pem: string; origin: TrustOrigin }>;
  pems: string[];
  cairn: string[];
  /** SHA-256 over the whole list: a stored verdict computed under another list is recomputed. */
  digest: string;
  /** Where each published list was read from. */
  sources: { c2pa: string; tsa: string; interim?: string };
  /** Each list the default is made of, with its identity and snapshot (which one decided trust goes in a report). */
  lists: ListInForce[];
}

/** A published list's copy in force, as its source loaded it (adapters/trust-sources.ts). */
export type LoadedCopy = Omit<TrustListIdentity, 'list' | 'name' | 'frozen'> & { name?: string };

export interface PublishedList {
  pems(): Promise<string[]>;
  origin(): string;
  /** What the copy in force is; undefined before it was loaded. */
  loaded?(): LoadedCopy | undefined;
}

/** The names the lists go by in reports when their copy does not name itself. */
const LIST_NAMES = {
  c2pa: 'C2PA Trust List',
  c2pa_tsa: 'C2PA TSA Trust List',
  interim: 'Interim Trust List (frozen)',
} as const;

/** SHA-256 over a list's certificates (whitespace-blind, order-blind): the snapshot of a list not read as a text. */
function certificatesDigest(pems: readonly string[]): string {
  return createHash('sha256')
    .update(
      pems
        .map((p) => p.replace(/\s+/g, ''))
        .sort()
        .join('\n'),
    )
    .digest('hex');
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
    /** `interim`: the frozen interim trust list, last in precedence (domain/trust-decision.ts); absent: not used. */
    private readonly published: { c2pa: PublishedList; tsa: PublishedList; interim?: PublishedList },
    /** The anchors of TRUST_ANCHORS_FILE, read on each call (adapters/trust-sources.ts). */
    private readonly configured: () => Promise<string[]>,
    /** Every change of a tenant's own list leaves an admin.changed audit event in its transaction. */
    private readonly outbox: AdminAuditOutbox,
  ) {}

  async forTenant(
    tenantId: string | undefined,
  ): Promise<{ pems: string[]; source: 'default' | 'custom'; lists: ListInForce[] }> {
    const custom = await this.custom(tenantId);
    if (custom) {
      const pems = custom.map((e) => e.certificate_pem);
      return {
        pems,
        source: 'custom',
        lists: [heldListInForce('custom', 'the tenant’s own trust list', 'tenant', pems)],
      };
    }
    const defaults = await this.loadDefaults();
    return { pems: defaults.pems, source: 'default', lists: defaults.lists };
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
    const [cairn, c2pa, tsa, configured, interim] = await Promise.all([
      this.cairnRootsCached(),
      this.published.c2pa.pems(),
      this.published.tsa.pems(),
      this.configured(),
      this.published.interim?.pems() ?? Promise.resolve([]),
    ]);
    // Each published copy's identity too: a list reloaded with the same certificates is another snapshot.
    const copies = [this.published.c2pa, this.published.tsa, this.published.interim].map((p) => {
      const copy = p?.loaded?.();
      return copy ? `${copy.sha256} ${copy.loadedAt}` : '';
    });
    const inputs = [
      cairn,
      c2pa,
      tsa,
      configured,
      interim,
      [this.published.c2pa.origin(), this.published.tsa.origin(), this.published.interim?.origin() ?? ''],
      copies,
    ];
    const last = this.assembled;
    if (last && inputs.every((list, i) => sameStrings(list, last.inputs[i] ?? []))) return last.list;
    const list = this.assemble(cairn, c2pa, tsa, configured, interim);
    this.assembled = { inputs, list };
    return list;
  }

  /** The default list from its sources, in precedence order, each certificate once, with each list's identity. */
  private assemble(
    cairn: string[],
    c2pa: string[],
    tsa: string[],
    configured: string[],
    interim: string[],
  ): DefaultTrustList {
    const entries = eachCertificateOnce([
      [cairn, 'cairn'],
      [c2pa, 'c2pa'],
      [tsa, 'c2pa_tsa'],
      [configured, 'configured'],
      [interim, 'interim'],
    ]);
    const pems = entries.map((e) => e.pem);
    const published = this.published;
    const lists: ListInForce[] = [
      this.cairnInForce(cairn),
      publishedInForce('c2pa', published.c2pa, c2pa),
      publishedInForce('c2pa_tsa', published.tsa, tsa),
      ...(published.interim ? [publishedInForce('interim', published.interim, interim)] : []),
      ...(configured.length ? [configuredInForce(configured)] : []),
    ];
    return {
      entries,
      pems,
      cairn,
      digest: defaultListDigest(pems),
      sources: {
        c2pa: published.c2pa.origin(),
        tsa: published.tsa.origin(),
        ...(published.interim ? { interim: published.interim.origin() } : {}),
      },
      lists,
    };
  }

  /** Cairn's root as a list in force: its snapshot is the certificates the signer last answered. */
  private cairnInForce(cairn: string[]): ListInForce {
    const loadedAt = this.roots ? new Date(this.roots.loadedAt).toISOString() : undefined;
    return heldListInForce('cairn', 'Cairn’s root', 'signer', cairn, loadedAt);
  }

  private async cairnRootsCached(): Promise<string[]> {
    if (!this.roots || Date.now() - this.roots.loadedAt >= 60_000)
      this.roots = { pems: await this.loadCairnRoots(), loadedAt: Date.now() };
    return this.roots.pems;
  }
}

/** The sources' certificates in order, a certificate listed again (whitespace aside) kept at its first origin. */
function eachCertificateOnce(sources: Array<[pems: string[], origin: TrustOrigin]>): DefaultTrustList['entries'] {
  const entries: DefaultTrustList['entries'] = [];
  const seen = new Set<string>();
  for (const [pems, origin] of sources) {
    for (const pem of pems) {
      const key = pem.replace(/\s+/g, '');
      if (seen.has(key)) continue;
      seen.add(key);
      entries.push({ pem, origin });
    }
  }
  return entries;
}

/** The default list's digest (DefaultTrustList.digest): over its certificates, trimmed and sorted. */
function defaultListDigest(pems: readonly string[]): string {
  return createHash('sha256')
    .update(
      pems
        .map((p) => p.trim())
        .sort()
        .join('\n'),
    )
    .digest('hex');
}

/** A published list in force, named and dated as its copy says (its certificates' digest when it says nothing). */
function publishedInForce(kind: 'c2pa' | 'c2pa_tsa' | 'interim', list: PublishedList, pems: string[]): ListInForce {
  const copy = list.loaded?.();
  const identity: TrustListIdentity = {
    list: kind,
    name: copy?.name ?? LIST_NAMES[kind],
    source: copy?.source ?? list.origin(),
    ...(copy?.issuedAt ? { issuedAt: copy.issuedAt } : {}),
    ...(copy?.nextUpdate ? { nextUpdate: copy.nextUpdate } : {}),
    sha256: copy?.sha256 ?? certificatesDigest(pems),
    certificates: pems.length,
    ...(copy?.loadedAt ? { loadedAt: copy.loadedAt } : {}),
    ...(kind === 'interim' ? { frozen: true } : {}),
  };
  return { identity, pems };
}

/** The anchors of TRUST_ANCHORS_FILE as a list in force. */
function configuredInForce(configured: string[]): ListInForce {
  return heldListInForce('configured', 'configured trust anchors', 'TRUST_ANCHORS_FILE', configured);
}

/**
 * A list in force that has no published copy (a tenant's own, Cairn's root, the configured anchors): named here,
 * its snapshot the digest of its certificates.
 */
function heldListInForce(
  list: 'custom' | 'cairn' | 'configured',
  name: string,
  source: string,
  pems: string[],
  loadedAt?: string,
): ListInForce {
  const identity: TrustListIdentity = {
    list,
    name,
    source,
    sha256: certificatesDigest(pems),
    certificates: pems.length,
    ...(loadedAt ? { loadedAt } : {}),
  };
  return { identity, pems };
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((value, i) => value === b[i]));
}
