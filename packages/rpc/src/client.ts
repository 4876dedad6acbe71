import * as grpc from '@grpc/grpc-js';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import { MethodOptions_IdempotencyLevel } from '@bufbuild/protobuf/wkt';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { CODE_METADATA_KEY, fromServiceError } from './status.js';
import { channelCredentials, type TlsMaterial } from './tls.js';

export interface CallOptions {
  /** Per-call deadline; the client default applies when absent. */
  deadlineMs?: number;
  metadata?: grpc.Metadata;
  /**
   * Server streams only: how long after the peer went away (UNAVAILABLE; see streamRetrySafe) the call keeps
   * opening the stream again, waiting for the peer to be reachable between tries, within the call's deadline.
   * Each outage gets its own window (a message from the peer ends it). The caller then reads the new stream: an
   * idempotent method's run again from its start. Absent or 0: a stream is never opened again.
   */
  retryWithinMs?: number;
}

export interface ClientOptions {
  /** Default deadline for every call. */
  deadlineMs?: number;
  /**
   * Extra attempts when the peer is UNAVAILABLE and a retry is safe (see retrySafe): the request never reached a
   * handler, or the method is declared idempotent in its .proto. Never for any other failure: those may have had effects.
   */
  retries?: number;
  /** Mutual TLS: this service's certificate, and the CA the peer's must chain to. Plaintext when absent. */
  tls?: TlsMaterial;
  /** With tls: the name the peer's certificate must carry (serviceTlsName), checked instead of the dialled host. */
  serverName?: string;
}

export type ServiceClient<M extends GenServiceMethods> = {
  [K in keyof M]: M[K] extends {
    methodKind: 'unary';
    input: infer I extends DescMessage;
    output: infer O extends DescMessage;
  }
    ? (request: MessageInitShape<I>, options?: CallOptions) => Promise<MessageShape<O>>
    : M[K] extends {
          methodKind: 'server_streaming';
          input: infer I extends DescMessage;
          output: infer O extends DescMessage;
        }
      ? (request: MessageInitShape<I>, options?: CallOptions) => AsyncIterable<MessageShape<O>>
      : never;
} & { close(): void; readonly channel: grpc.Client };

/** The methods of a generated service descriptor: `MethodsOf<typeof signerV1.SignerService>`. */
export type MethodsOf<S extends GenService<GenServiceMethods>> = S extends GenService<infer M> ? M : never;

/** The typed client createClient returns for a generated service: `ClientOf<typeof signerV1.SignerService>`. */
export type ClientOf<S extends GenService<GenServiceMethods>> = ServiceClient<MethodsOf<S>>;

const tracer = trace.getTracer('cairn-rpc');

/** A target that is one IP literal and port (`127.0.0.1:9451`, `[::1]:9451`): it can never resolve to more. */
function singleAddress(target: string): boolean {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|(\d{1,3}(?:\.\d{1,3}){3})):\d+$/.exec(target);
  return match !== null;
}

/** The channel's load balancing: round-robin over every ready address of the target (see createClient). */
export const ROUND_ROBIN = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/** Longer than the channel's longest reconnect backoff (2 s), so one wait sees the next connection attempt. */
const RECONNECT_WAIT_MS = 2500;

/** Resolves when the channel is connected, or at `until` (the caller's next attempt then reports what it finds). */
function channelReady(channel: grpc.Client, until: Date): Promise<void> {
  return new Promise((resolve) => channel.waitForReady(until, () => resolve()));
}

function outgoingMetadata(base: grpc.Metadata | undefined): grpc.Metadata {
  const metadata = base?.clone() ?? new grpc.Metadata();
  propagation.inject(context.active(), metadata, { set: (carrier, key, value) => carrier.set(key, value) });
  return metadata;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** grpc-js details of an UNAVAILABLE whose request was never handed to a server handler. */
const NOT_SENT =
  /^(round_robin: )?(No connection established|Stream refused by server|Channel closed before call started)|ECONNREFUSED|Connect Failed|Failed to connect/;

/**
 * Whether an UNAVAILABLE may be retried without risking a second effect. An answer the handler gave itself
 * (it carries the cairn code, e.g. the signer's 503 for a crashed parser) is final: the work ran. A dropped
 * connection mid-call (the peer died while handling it) may have had effects, so only a method the .proto
 * declares `idempotency_level = NO_SIDE_EFFECTS | IDEMPOTENT` is retried after it; a request that never left
 * (no connection, refused stream) always may be.
 */
export function retrySafe(error: grpc.ServiceError, idempotent: boolean): boolean {
  if (error.code !== grpc.status.UNAVAILABLE) return false;
  if (error.metadata?.get(CODE_METADATA_KEY).length) return false;
  return idempotent || NOT_SENT.test(error.details ?? '');
}

/**
 * Whether a server stream cut by `error` may be opened again (CallOptions.retryWithinMs). A method declared
 * idempotent may be run again however far the cut one got: after a dropped connection, after its handler's own
 * `cairn.unavailable` (a peer draining for a restart ends its streams with it: the work did not finish), and after
 * CANCELLED, which a caller still reading never sends itself (grpc-js reports a peer's forced shutdown at the end of
 * its drain grace so). Any other handler answer is final, as for unary calls; a method with effects is opened again
 * only when the stream never reached a handler.
 */
export function streamRetrySafe(error: grpc.ServiceError, idempotent: boolean): boolean {
  if (!idempotent) return retrySafe(error, false);
  if (error.code === grpc.status.CANCELLED) return true;
  if (error.code !== grpc.status.UNAVAILABLE) return false;
  const sent = error.metadata?.get(CODE_METADATA_KEY) ?? [];
  return sent.length === 0 || sent[0] === 'cairn.unavailable';
}

/** Pauses between two openings of a stream whose peer refuses it: 100 ms, doubling, at most the reconnect wait. */
const STREAM_RETRY_MAX_PAUSE_MS = 2000;

/**
 * A typed client for a generated service at `address`, a grpc-js target: `host:port`, `dns:///name:port` (every
 * address the name resolves to, re-resolved when a connection closes), or `ipv4:127.0.0.1:a,127.0.0.1:b`. Unary calls get a deadline, a client span whose context travels in
 * metadata, retries with backoff on UNAVAILABLE, and failures as CairnError (cairn code preserved end to end).
 */
export function createClient<M extends GenServiceMethods>(
  service: GenService<M>,
  address: string,
  options: ClientOptions = {},
): ServiceClient<M> {
  const channel = new grpc.Client(address, channelCredentials(options.tls), {
    ...(options.tls && options.serverName
      ? { 'grpc.ssl_target_name_override': options.serverName, 'grpc.default_authority': options.serverName }
      : {}),
    'grpc.max_receive_message_length': 128 * 1024 * 1024,
    'grpc.max_send_message_length': 128 * 1024 * 1024,
    // Every address the target resolves to (a headless Service's pods, the dev runner's `ipv4:a,b` list) gets a
    // share of the calls, and a call is only ever picked onto a connected one: pick_first would pin every call to
    // the first address, so new replicas got nothing and a dead one failed calls until the next resolution.
    // One IP literal is one address: nothing to balance, and pick_first reconnects a restarted peer sooner on a
    // loaded machine (round_robin's subchannel backoff made a first call time out there about once in 30).
    ...(singleAddress(address) ? {} : { 'grpc.service_config': ROUND_ROBIN }),
    // A peer that restarts (a rollout, a crash) is back within a second or two: reconnect attempts must
    // not back off far beyond that, or calls keep failing after it is up again.
    'grpc.initial_reconnect_backoff_ms': 200,
    'grpc.max_reconnect_backoff_ms': 2000,
  });
  const defaultDeadline = options.deadlineMs ?? 10_000;
  const retries = options.retries ?? 5;
  const client: Record<string, unknown> = { close: () => channel.close(), channel };

  for (const method of service.methods) {
    const path = `/${service.typeName}/${method.name}`;
    const input: DescMessage = method.input;
    const output: DescMessage = method.output;
    const serialize = (value: MessageInitShape<DescMessage>) => Buffer.from(toBinary(input, create(input, value)));
    const deserialize = (bytes: Buffer) => fromBinary(output, bytes);
    const idempotent =
      method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS ||
      method.idempotency === MethodOptions_IdempotencyLevel.IDEMPOTENT;

    if (method.methodKind === 'unary') {
      const once = (request: MessageInitShape<DescMessage>, metadata: grpc.Metadata, deadline: Date) =>
        new Promise<MessageShape<DescMessage>>((resolve, reject) => {
          channel.makeUnaryRequest(path, serialize, deserialize, request, metadata, { deadline }, (error, response) => {
            if (error) reject(error);
            else resolve(response as MessageShape<DescMessage>);
          });
        });
      client[method.localName] = (request: MessageInitShape<DescMessage>, callOptions: CallOptions = {}) =>
        tracer.startActiveSpan(
          path,
          { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'grpc', 'rpc.method': path } },
          async (span) => {
            const deadline = new Date(Date.now() + (callOptions.deadlineMs ?? defaultDeadline));
            const metadata = outgoingMetadata(callOptions.metadata);
            try {
              let waitedForPeer = false;
              for (let attempt = 0; ; attempt++) {
                try {
                  return await once(request, metadata, deadline);
                } catch (error) {
                  const serviceError = error as grpc.ServiceError;
                  // 100, 200, 400, 800, 1600 ms: about three seconds in all, never past the deadline.
                  const backoff = 100 * 2 ** attempt;
                  const retryable =
                    retrySafe(serviceError, idempotent) &&
                    attempt < retries &&
                    Date.now() + backoff < deadline.getTime();
                  if (!retryable) throw fromServiceError(serviceError);
                  if (waitedForPeer) {
                    await sleep(backoff);
                  } else {
                    // Right after the peer restarts, the channel sits out its reconnect backoff (up to 2 s) and fails
                    // calls at once although the peer is back: wait for it to connect, once, for a bounded time.
                    waitedForPeer = true;
                    await channelReady(channel, new Date(Math.min(deadline.getTime(), Date.now() + RECONNECT_WAIT_MS)));
                  }
                }
              }
            } catch (error) {
              span.setStatus({ code: SpanStatusCode.ERROR });
              throw error;
            } finally {
              span.end();
            }
          },
        );
    } else if (method.methodKind === 'server_streaming') {
      client[method.localName] = (request: MessageInitShape<DescMessage>, callOptions: CallOptions = {}) => {
        // One deadline for the whole call, reopenings included, as a unary call's retries.
        const deadlineAt = callOptions.deadlineMs ? Date.now() + callOptions.deadlineMs : Infinity;
        const deadline = deadlineAt === Infinity ? Infinity : new Date(deadlineAt);
        const retryWithinMs = callOptions.retryWithinMs ?? 0;
        const open = () =>
          channel.makeServerStreamRequest(
            path,
            serialize,
            deserialize,
            request,
            outgoingMetadata(callOptions.metadata),
            { deadline },
          );
        return (async function* () {
          // When the current outage began (the first cut since the peer's last message), and how often it refused.
          let outageSince: number | undefined;
          let refusals = 0;
          for (;;) {
            try {
              for await (const message of open()) {
                outageSince = undefined;
                refusals = 0;
                yield message as MessageShape<DescMessage>;
              }
              return;
            } catch (error) {
              const serviceError = error as grpc.ServiceError;
              outageSince ??= Date.now();
              const until = Math.min(outageSince + retryWithinMs, deadlineAt);
              const pause = Math.min(STREAM_RETRY_MAX_PAUSE_MS, 100 * 2 ** refusals);
              if (!(retryWithinMs > 0 && streamRetrySafe(serviceError, idempotent) && Date.now() + pause < until))
                throw fromServiceError(serviceError);
              refusals += 1;
              // A draining peer refuses at once while its connection is still up: pause, then wait (bounded by the
              // window) for the channel to reach the peer again, which after a restart is the new process.
              await sleep(pause);
              await channelReady(channel, new Date(until));
            }
          }
        })();
      };
    }
  }
  return client as ServiceClient<M>;
}
