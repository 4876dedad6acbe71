import { DiscardPolicy, JetStreamApiError, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import type { Logger } from '@cairn/logging';

/** How big and how replicated every stream a service creates is (NATS_STREAM_MAX_BYTES, NATS_STREAM_REPLICAS). */
export interface StreamLimits {
  /** 1..5 copies on as many JetStream servers; above 1 needs a clustered JetStream. */
  replicas: number;
  /** Bytes one stream may hold; -1 = unlimited. NATS reserves this much storage (× replicas) at creation. */
  maxBytes: number;
}

/** NATS_STREAM_REPLICAS and NATS_STREAM_MAX_BYTES's defaults (packages/config): one copy, 1 GiB. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = { replicas: 1, maxBytes: 1024 ** 3 };

/**
 * What a full stream does. The event stream is a log every consumer reads at its own pace, kept by age: when full,
 * its oldest events go (a consumer more than the limit behind loses them; size the limit for the longest consumer
 * outage). A work queue holds work not done yet: when full, the new item is refused (the publisher fails and says
 * so, see JobRunner.enqueue in @cairn/runtime) rather than dropping queued work.
 */
export type StreamRole = 'events' | 'work';

/** A stream the service needs but JetStream will not create or update as configured: start-up stops with this. */
export class StreamSettingsError extends Error {
  constructor(
    readonly stream: string,
    readonly limits: StreamLimits,
    reason: string,
  ) {
    super(
      `JetStream refused stream ${stream} with NATS_STREAM_REPLICAS=${limits.replicas} NATS_STREAM_MAX_BYTES=${limits.maxBytes}: ${reason}`,
    );
    this.name = 'StreamSettingsError';
  }
}

/** The settings a stream of `role` gets from `limits`, as JetStream names them. */
export function limitSettings(
  role: StreamRole,
  limits: StreamLimits,
): Pick<StreamConfig, 'num_replicas' | 'max_bytes' | 'discard'> {
  return {
    num_replicas: limits.replicas,
    max_bytes: limits.maxBytes,
    discard: role === 'work' ? DiscardPolicy.New : DiscardPolicy.Old,
  };
}

/** The settings of `current` that differ from `wanted`, each as `{ from, to }`. */
export function settingChanges(
  current: Partial<StreamConfig>,
  wanted: ReturnType<typeof limitSettings>,
): Record<string, { from: unknown; to: unknown }> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const key of Object.keys(wanted) as Array<keyof typeof wanted>) {
    if (current[key] !== wanted[key]) changes[key] = { from: current[key], to: wanted[key] };
  }
  return changes;
}

function reasonOf(error: unknown, limits: StreamLimits): string {
  const message = error instanceof Error ? error.message : String(error);
  // 10074: "replicas > 1 not supported in non-clustered mode"; 10047: "insufficient storage resources available".
  const code = error instanceof JetStreamApiError ? error.code : undefined;
  if (code === 10074 || /replicas > 1/.test(message))
    return `${message} (NATS_STREAM_REPLICAS=${limits.replicas} needs a clustered JetStream of at least ${limits.replicas} servers; set 1 on a single server)`;
  if (code === 10047 || /insufficient storage/.test(message))
    return `${message} (NATS reserves NATS_STREAM_MAX_BYTES × replicas per stream at creation: lower it or give JetStream more storage)`;
  return message;
}

export interface EnsureStreamOptions {
  jsm: JetStreamManager;
  /** name, subjects, retention, ages: everything but the limits. */
  config: Partial<StreamConfig> & { name: string; subjects: string[] };
  role: StreamRole;
  /** Absent: the stream is created with the server's defaults and an existing one is left as it is (tests, tools). */
  limits?: StreamLimits;
  /** Whether the server is part of a JetStream cluster (its INFO names one). */
  clustered: boolean;
  logger?: Logger;
}

/**
 * Creates the stream if missing, with the limits; brings an existing stream's limits to the configured ones
 * (streams.update: replicas, size and discard policy can change in place), logging what changed. Safe from
 * every replica of every service at once.
 */
export async function ensureStream(options: EnsureStreamOptions): Promise<void> {
  const { jsm, config, role, limits, logger } = options;
  const wanted = limits ? limitSettings(role, limits) : undefined;
  const existing = await jsm.streams.info(config.name).catch((error: unknown) => {
    if (error instanceof JetStreamApiError && error.code === 10059) return undefined; // stream not found
    throw error;
  });
  if (!existing) {
    try {
      await jsm.streams.add({ ...config, ...wanted });
      logger?.info({ stream: config.name, ...wanted }, 'stream created');
      return;
    } catch (error) {
      // Another replica created it between our look and our add: then it is checked like any existing stream.
      const raced = await jsm.streams.info(config.name).catch(() => undefined);
      if (!raced) throw limits ? new StreamSettingsError(config.name, limits, reasonOf(error, limits)) : error;
      return ensureStream(options);
    }
  }
  if (!limits || !wanted) return;
  const changes = settingChanges(existing.config, wanted);
  if (Object.keys(changes).length === 0) return;
  // NATS 2.9 accepts R>1 in an update on a single server (and keeps one copy): say so instead of pretending.
  if (limits.replicas > 1 && !options.clustered)
    throw new StreamSettingsError(
      config.name,
      limits,
      reasonOf(new Error('replicas > 1 not supported in non-clustered mode'), limits),
    );
  try {
    await jsm.streams.update(config.name, wanted);
  } catch (error) {
    throw new StreamSettingsError(config.name, limits, reasonOf(error, limits));
  }
  logger?.warn({ stream: config.name, changes }, 'stream settings changed to the configured ones');
}
