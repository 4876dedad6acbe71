import { createHash } from 'node:crypto';
import { ByteBoundedLru } from '@cairn/runtime';
import type { OcspEvidence } from '../../domain/evidence.js';
import type { PublicRecord } from '../ports.js';

/** The facts a kept answer depends on, each announced by an event (events.ts): `certificate.revoked`. */
export type SignalTopic = 'revocation';

/**
 * One token per topic, shared by every replica and replaced when that topic's event is handled (by whichever
 * replica's consumer gets it). An answer is kept with the token in force when its verify began and used only
 * while that token still is, so every replica drops it on its next verify after the event, and an answer asked
 * before the event but kept after it is never used. Undefined when the token cannot be read: nothing is kept or
 * reused then.
 */
export interface SignalEpochs {
  current(): Promise<Epochs>;
  advance(topic: SignalTopic): Promise<void>;
}

/** The event tokens in force when a verify began. */
export type Epochs = Partial<Record<SignalTopic, string>>;

interface Entry<V> {
  readonly value: V;
  readonly until: number;
  /** The token the answer depends on; undefined for an answer that no event can change. */
  readonly epoch?: { readonly topic: SignalTopic; readonly token: string };
}

/**
 * Answers a verify of a Cairn asset gets besides reading the file (app/verify/signals.ts, records.ts), kept so
 * that a verify asks only what may have changed since (docs/decisions/0012-signal-answers-kept-until-their-event.md):
 *
 * - OCSP `good`/`revoked` about a chain that leads to Cairn's own roots (whose revocations announce themselves,
 *   `certificate.revoked`), until min(the responder's nextUpdate, `maxAgeMs`), under the revocation token;
 * - the asset's public record until `maxAgeMs` (what a verify reads of it is written once; absence is not kept).
 *
 * Both are public facts about a certificate or an asset, the same whoever asks: no tenant is part of a key.
 * Bounded by the bytes the answers hold (least recently used out); per process, lost on restart.
 */
export class SignalCache {
  readonly #entries: ByteBoundedLru<Entry<unknown>>;

  constructor(
    maxBytes: number,
    private readonly maxAgeMs: number,
  ) {
    this.#entries = new ByteBoundedLru(maxBytes);
  }

  static ocspKey(leafPem: string, issuerPem: string, url: string): string {
    return `ocsp:${createHash('sha256').update(leafPem).update('\0').update(issuerPem).update('\0').update(url).digest('hex')}`;
  }

  getOcsp(key: string, epochs: Epochs, now: number): OcspEvidence | undefined {
    return this.#get<OcspEvidence>(key, epochs, now);
  }

  setOcsp(key: string, status: OcspEvidence, nextUpdate: Date | undefined, epochs: Epochs, now: number): void {
    if ((status !== 'good' && status !== 'revoked') || !nextUpdate) return;
    this.#set(key, status, Math.min(nextUpdate.getTime(), now + this.maxAgeMs), 'revocation', epochs, 256);
  }

  getRecord(assetId: string, now: number): PublicRecord | undefined {
    return this.#get<PublicRecord>(`record:${assetId}`, {}, now);
  }

  setRecord(asset: PublicRecord, now: number): void {
    this.#set(`record:${asset.assetId}`, asset, now + this.maxAgeMs, undefined, {}, 256);
  }

  #get<V>(key: string, epochs: Epochs, now: number): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (now >= entry.until || (entry.epoch && epochs[entry.epoch.topic] !== entry.epoch.token)) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value as V;
  }

  #set<V>(key: string, value: V, until: number, topic: SignalTopic | undefined, epochs: Epochs, bytes: number): void {
    if (this.maxAgeMs <= 0) return;
    const token = topic ? epochs[topic] : undefined;
    // Without the token in force there is no telling when the answer stops being true: not kept.
    if (topic && token === undefined) return;
    this.#entries.set(
      key,
      { value, until, ...(topic && token ? { epoch: { topic, token } } : {}) },
      key.length * 2 + bytes,
    );
  }
}
