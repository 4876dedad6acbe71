import { randomUUID } from 'node:crypto';
import type { Epochs, SignalEpochs, SignalTopic } from '../app/verify/signal-cache.js';

/** The two Redis commands the tokens need (the service's client, whose key prefix keeps fleets apart). */
export interface EpochStore {
  mget(...keys: string[]): Promise<Array<string | null>>;
  set(key: string, value: string, nx?: 'NX'): Promise<unknown>;
}

const TOPICS: readonly SignalTopic[] = ['revocation'];
const keyOf = (topic: SignalTopic) => `verifier:signal-epoch:${topic}`;

/**
 * The tokens in Redis, shared by the verifier's replicas. A new token is random (never a counter), so a Redis that
 * lost its data can never bring back a token an answer was kept under; a missing one is created (first writer wins).
 * A Redis that does not answer yields no tokens: every verify then asks afresh.
 */
export class RedisSignalEpochs implements SignalEpochs {
  constructor(private readonly redis: EpochStore) {}

  async current(): Promise<Epochs> {
    try {
      let values = await this.redis.mget(...TOPICS.map(keyOf));
      if (values.some((v) => v === null)) {
        const missing = TOPICS.filter((_, i) => values[i] === null);
        await Promise.all(missing.map((topic) => this.redis.set(keyOf(topic), randomUUID(), 'NX')));
        values = await this.redis.mget(...TOPICS.map(keyOf));
      }
      const epochs: Epochs = {};
      TOPICS.forEach((topic, i) => {
        const value = values[i];
        if (typeof value === 'string') epochs[topic] = value;
      });
      return epochs;
    } catch {
      return {};
    }
  }

  async advance(topic: SignalTopic): Promise<void> {
    await this.redis.set(keyOf(topic), randomUUID());
  }
}
