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

/**
 * One published list, kept in memory. A URL is fetched again through the outbound policy every `refreshMs`; a file
 * is read again every minute (or `refreshMs`, if shorter). A list that cannot be read or fetched, or holds no
 * certificate, leaves the last good copy in force (a URL that never answered falls back to the shipped copy): a
 * refresh never empties trust.
 */
export class PublishedTrustList {
  private current: { pems: string[]; loadedAt: number; from: string } | undefined;
  private loading: Promise<void> | undefined;

  constructor(
    private readonly source: TrustSource,
    private readonly options: { builtin: URL; refreshMs: number; policy: DestinationPolicy; logger?: Logger },
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

  private async load(): Promise<void> {
    try {
      const text = await this.read();
      const pems = splitPem(text);
      if (pems.length === 0) throw new Error('holds no PEM certificate');
      this.current = { pems, loadedAt: Date.now(), from: describeSource(this.source) };
    } catch (error) {
      this.options.logger?.warn(
        { err: error, source: describeSource(this.source) },
        'trust list could not be loaded; the last good copy stays in force',
      );
      if (this.current) {
        this.current = { ...this.current, loadedAt: Date.now() };
      } else if (this.source.kind === 'url') {
        const shipped = splitPem(await readFile(this.options.builtin, 'utf8'));
        this.current = {
          pems: shipped,
          loadedAt: Date.now(),
          from: `${describeSource({ kind: 'builtin', file: this.options.builtin })} (${this.source.url} unreachable)`,
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

/** The anchors of TRUST_ANCHORS_FILE, read on every call so an edited file is in force at once; none when unset. */
export function anchorsFile(path: string | undefined): () => Promise<string[]> {
  return path ? () => readFile(path, 'utf8').then(splitPem) : () => Promise.resolve([]);
}
