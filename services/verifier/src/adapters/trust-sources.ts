import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from '@cairn/logging';
import { boundedRequest, type DestinationPolicy } from '@cairn/outbound';

/** Where a published trust list comes from: the copy shipped with the verifier, a PEM file, an https URL, or nowhere. */
export type TrustSource =
  { kind: 'builtin'; file: URL } | { kind: 'file'; path: string } | { kind: 'url'; url: string } | { kind: 'none' };

/** `builtin` | `none` | an http(s) URL | a file path (the C2PA_TRUST_LIST / C2PA_TSA_TRUST_LIST setting). */
export function parseTrustSource(value: string, builtin: URL): TrustSource {
  if (value === 'builtin') return { kind: 'builtin', file: builtin };
  if (value === 'none') return { kind: 'none' };
  if (/^https?:\/\//i.test(value)) return { kind: 'url', url: value };
  return { kind: 'file', path: value };
}

export function describeSource(source: TrustSource): string {
  switch (source.kind) {
    case 'builtin':
      return 'shipped with Cairn';
    case 'file':
      return `file ${source.path}`;
    case 'url':
      return source.url;
    case 'none':
      return 'none';
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const MAX_LIST_BYTES = 2 * 1024 * 1024;

export function splitPem(bundle: string): string[] {
  return bundle.match(PEM_CERT) ?? [];
}

/** What a list says of itself: the ETSI TS 119 602 "List of Trusted Entities" header; a PEM bundle says nothing. */
export interface ListHeader {
  name?: string;
  issuedAt?: string;
  nextUpdate?: string;
}

/** One list as read: its certificates, its header, and the SHA-256 of the text exactly as it was read. */
export interface ListContent extends ListHeader {
  pems: string[];
  sha256: string;
}

function derToPem(base64: string): string {
  return `-----BEGIN CERTIFICATE-----\n${base64.replace(/\s+/g, '').replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`;
}

const record = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * A trust list as published: a PEM bundle, or the C2PA's JSON "List of Trusted Entities" (ETSI TS 119 602, as
 * `C2PA-TRUST-LIST.json`), whose header dates the list (ListIssueDateTime, NextUpdate) and whose services carry the
 * certificates (base64 DER). Anything else holds no certificate.
 */
export function parseTrustList(raw: string): ListContent {
  const sha256 = createHash('sha256').update(raw).digest('hex');
  if (!raw.trimStart().startsWith('{')) return { pems: splitPem(raw), sha256 };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { pems: [], sha256 };
  }
  const lote = record(record(json).LoTE);
  const info = record(lote.ListAndSchemeInformation);
  const pems: string[] = [];
  for (const entity of list(lote.TrustedEntitiesList)) {
    for (const service of list(record(entity).TrustedEntityServices)) {
      const identity = record(record(record(service).ServiceInformation).ServiceDigitalIdentity);
      for (const cert of list(identity.X509Certificates)) {
        const val = text(record(cert).val);
        if (val && /^[A-Za-z0-9+/=\s]+$/.test(val)) pems.push(derToPem(val));
      }
    }
  }
  const name = text(record(list(info.SchemeName)[0]).value);
  const issuedAt = text(info.ListIssueDateTime);
  const nextUpdate = text(info.NextUpdate);
  return {
    pems,
    sha256,
    ...(name ? { name } : {}),
    ...(issuedAt && !Number.isNaN(Date.parse(issuedAt)) ? { issuedAt: new Date(issuedAt).toISOString() } : {}),
    ...(nextUpdate && !Number.isNaN(Date.parse(nextUpdate)) ? { nextUpdate: new Date(nextUpdate).toISOString() } : {}),
  };
}

/** The identity of a list as it was loaded: which copy decided, so a report can name it. */
export interface LoadedList extends ListHeader {
  /** Where it was read from (describeSource, or the shipped copy standing in for an unreachable URL). */
  source: string;
  /** SHA-256 of the list's text as read (PEM bundle or JSON list). */
  sha256: string;
  certificates: number;
  /** When this copy was read (ISO 8601). */
  loadedAt: string;
}

/**
 * One published list, kept in memory. A URL is fetched again through the outbound policy every `refreshMs`; a file
 * is read again every minute (or `refreshMs`, if shorter). A list that cannot be read or fetched, or holds no
 * certificate, leaves the last good copy in force (a URL that never answered falls back to the shipped copy): a
 * refresh never empties trust.
 */
export class PublishedTrustList {
  private current: { pems: string[]; loadedAt: number; from: string; loaded: LoadedList } | undefined;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly source: TrustSource,
    private readonly options: {
      builtin: URL;
      refreshMs: number;
      policy: DestinationPolicy;
      logger?: Logger;
      /** What the shipped copy is (its PEM bundle carries no header): its name and dates, from its README. */
      shipped?: ListHeader;
    },
  ) {}

  async pems(): Promise<string[]> {
    if (this.source.kind === 'none') return [];
    const maxAge = this.source.kind === 'url' ? this.options.refreshMs : Math.min(60_000, this.options.refreshMs);
    if (!this.current || Date.now() - this.current.loadedAt >= maxAge) {
      this.loading ??= this.load().finally(() => (this.loading = undefined));
      await this.loading;
    }
    return this.current?.pems ?? [];
  }

  /** Where the list in force was read from (the configured source, or the shipped copy standing in for it). */
  origin(): string {
    return this.current?.from ?? describeSource(this.source);
  }

  /** The copy in force and what it is (undefined before the first load, or for `none`). */
  loaded(): LoadedList | undefined {
    return this.current?.loaded;
  }

  private loadedFrom(content: ListContent, from: string, shipped: boolean, at: number): LoadedList {
    const header = shipped ? { ...this.options.shipped, ...dropUndefined(content) } : dropUndefined(content);
    return {
      ...(header.name ? { name: header.name } : {}),
      ...(header.issuedAt ? { issuedAt: header.issuedAt } : {}),
      ...(header.nextUpdate ? { nextUpdate: header.nextUpdate } : {}),
      source: from,
      sha256: content.sha256,
      certificates: content.pems.length,
      loadedAt: new Date(at).toISOString(),
    };
  }

  private async load(): Promise<void> {
    try {
      const content = parseTrustList(await this.read());
      if (content.pems.length === 0) throw new Error('holds no certificate');
      const from = describeSource(this.source);
      const now = Date.now();
      // The same text read again is the same snapshot: it keeps the time it was first loaded.
      const same = this.current?.from === from && this.current.loaded.sha256 === content.sha256;
      this.current = {
        pems: content.pems,
        loadedAt: now,
        from,
        loaded:
          same && this.current
            ? this.current.loaded
            : this.loadedFrom(content, from, this.source.kind === 'builtin', now),
      };
    } catch (error) {
      this.options.logger?.warn(
        { err: error, source: describeSource(this.source) },
        'trust list could not be loaded; the last good copy stays in force',
      );
      if (this.current) {
        this.current = { ...this.current, loadedAt: Date.now() };
      } else if (this.source.kind === 'url') {
        const shipped = parseTrustList(await readFile(this.options.builtin, 'utf8'));
        const from = `${describeSource({ kind: 'builtin', file: this.options.builtin })} (${this.source.url} unreachable)`;
        const now = Date.now();
        this.current = {
          pems: shipped.pems,
          loadedAt: now,
          from,
          loaded: this.loadedFrom(shipped, from, true, now),
        };
      } else {
        throw error;
      }
    }
  }

  private async read(): Promise<string> {
    switch (this.source.kind) {
      case 'builtin':
        return readFile(this.source.file, 'utf8');
      case 'file':
        return readFile(this.source.path, 'utf8');
      case 'url': {
        const answer = await boundedRequest(this.source.url, {
          method: 'GET',
          headers: { Accept: 'application/x-pem-file, text/plain' },
          timeoutMs: 10_000,
          maxBytes: MAX_LIST_BYTES,
          policy: this.options.policy,
        });
        if (!answer.ok) throw new Error(answer.error);
        if (answer.status !== 200) throw new Error(`answered HTTP ${answer.status}`);
        return answer.body.toString('utf8');
      }
      case 'none':
        return '';
    }
  }
}

function dropUndefined(content: ListHeader): ListHeader {
  return {
    ...(content.name ? { name: content.name } : {}),
    ...(content.issuedAt ? { issuedAt: content.issuedAt } : {}),
    ...(content.nextUpdate ? { nextUpdate: content.nextUpdate } : {}),
  };
}

/** The anchors of TRUST_ANCHORS_FILE, read on every call so an edited file is in force at once; none when unset. */
export function anchorsFile(path: string | undefined): () => Promise<string[]> {
  return path ? () => readFile(path, 'utf8').then(splitPem) : () => Promise.resolve([]);
}
