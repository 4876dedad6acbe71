import * as grpc from '@grpc/grpc-js';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { grpcServiceDefinition } from './definition.js';
import { CODE_METADATA_KEY, toServiceError } from './status.js';
import { serverCredentials, type TlsMaterial } from './tls.js';
import { reflectionService } from './reflection.js';
import type { MethodsOf } from './client.js';

export interface CallContext {
  metadata: grpc.Metadata;
  /** Aborted when the caller cancels or its deadline passes. */
  signal: AbortSignal;
}

type Unary<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  ctx: CallContext,
) => Promise<MessageInitShape<O>>;
type ServerStreaming<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  ctx: CallContext,
) => AsyncIterable<MessageInitShape<O>>;

/** The handlers a service implements: one per RPC, typed from the generated descriptor. */
export type ServiceImpl<M extends GenServiceMethods> = {
  [K in keyof M]: M[K] extends {
    methodKind: 'unary';
    input: infer I extends DescMessage;
    output: infer O extends DescMessage;
  }
    ? Unary<I, O>
    : M[K] extends {
          methodKind: 'server_streaming';
          input: infer I extends DescMessage;
          output: infer O extends DescMessage;
        }
      ? ServerStreaming<I, O>
      : never;
};

/** The handlers a generated service's server implements: `ImplOf<typeof signerV1.SignerService>`. */
export type ImplOf<S extends GenService<GenServiceMethods>> = ServiceImpl<MethodsOf<S>>;

const metadataGetter = {
  get: (carrier: grpc.Metadata, key: string) => {
    const values = carrier.get(key);
    return values.length ? values.map(String) : undefined;
  },
  keys: (carrier: grpc.Metadata) => Object.keys(carrier.getMap()),
};

const tracer = trace.getTracer('cairn-rpc');

function callContext(
  call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>,
): CallContext {
  const controller = new AbortController();
  call.on('cancelled', () => controller.abort());
  return { metadata: call.metadata, signal: controller.signal };
}

/** Runs a handler inside a server span that continues the caller's trace (W3C context from metadata). */
function traced<T>(path: string, metadata: grpc.Metadata, fn: () => Promise<T>): Promise<T> {
  const parent = propagation.extract(context.active(), metadata, metadataGetter);
  return tracer.startActiveSpan(
    path,
    { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.method': path } },
    parent,
    async (span) => {
      try {
        return await fn();
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

export interface ServerOptions {
  /**
   * Closes each client connection this long after it opened (GOAWAY; calls in flight keep running for
   * `maxConnectionAgeGraceMs`), so clients reconnect and re-resolve: a replica started after them gets their calls.
   */
  maxConnectionAgeMs?: number;
  maxConnectionAgeGraceMs?: number;
  /** Told of every call a handler answered: its path and `ok` or the cairn code of its error (for metrics). */
  onHandled?: (path: string, outcome: string) => void;
}

/** GRPC_MAX_CONNECTION_AGE_MS / GRPC_MAX_CONNECTION_AGE_GRACE_MS's defaults (packages/config). */
export const DEFAULT_MAX_CONNECTION_AGE_MS = 300_000;
export const DEFAULT_MAX_CONNECTION_AGE_GRACE_MS = 30_000;

function outcomeOf(error: Partial<grpc.ServiceError>): string {
  const code = error.metadata?.get(CODE_METADATA_KEY)[0];
  return typeof code === 'string' ? code : 'error';
}

export class RpcServer {
  readonly server: grpc.Server;

  private readonly onHandled: (path: string, outcome: string) => void;

  constructor(options: ServerOptions = {}) {
    this.onHandled = options.onHandled ?? (() => undefined);
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': 128 * 1024 * 1024,
      'grpc.max_send_message_length': 128 * 1024 * 1024,
      'grpc.max_connection_age_ms': options.maxConnectionAgeMs ?? DEFAULT_MAX_CONNECTION_AGE_MS,
      'grpc.max_connection_age_grace_ms': options.maxConnectionAgeGraceMs ?? DEFAULT_MAX_CONNECTION_AGE_GRACE_MS,
    });
  }

  /** Fully qualified names of the services added, e.g. cairn.audit.v1.AuditService. */
  readonly serviceNames: string[] = [];

  add<M extends GenServiceMethods>(service: GenService<M>, impl: ServiceImpl<M>): void {
    const definition = grpcServiceDefinition(service);
    this.serviceNames.push(service.typeName);
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const method of service.methods) {
      const path = `/${service.typeName}/${method.name}`;
      const handler = (impl as Record<string, unknown>)[method.localName];
      if (typeof handler !== 'function') throw new Error(`${path} has no handler`);
      if (method.methodKind === 'unary') {
        handlers[method.localName] = (
          call: grpc.ServerUnaryCall<unknown, unknown>,
          callback: grpc.sendUnaryData<unknown>,
        ) => {
          traced(path, call.metadata, () =>
            (handler as Unary<DescMessage, DescMessage>)(call.request as MessageShape<DescMessage>, callContext(call)),
          ).then(
            (response) => {
              this.onHandled(path, 'ok');
              callback(null, response);
            },
            (error: unknown) => {
              const serviceError = toServiceError(error);
              this.onHandled(path, outcomeOf(serviceError));
              callback(serviceError);
            },
          );
        };
      } else if (method.methodKind === 'server_streaming') {
        handlers[method.localName] = (call: grpc.ServerWritableStream<unknown, unknown>) => {
          traced(path, call.metadata, async () => {
            for await (const message of (handler as ServerStreaming<DescMessage, DescMessage>)(
              call.request as MessageShape<DescMessage>,
              callContext(call),
            )) {
              if (call.cancelled) break;
              call.write(message);
            }
          }).then(
            () => {
              this.onHandled(path, 'ok');
              call.end();
            },
            (error: unknown) => {
              const serviceError = toServiceError(error);
              this.onHandled(path, outcomeOf(serviceError));
              // grpc-js sends a stream's status from its own 'error' listener; destroy() would skip it, leaving the
              // caller waiting for its deadline instead of reading the handler's error.
              call.emit('error', Object.assign(new Error(), serviceError));
            },
          );
        };
      } else {
        throw new Error(`${path}: ${method.methodKind} RPCs are not supported`);
      }
    }
    // grpc-js refuses a service without methods; one still counts for health until its RPCs arrive.
    if (service.methods.length > 0) this.server.addService(definition, handlers);
  }

  /** Binds and starts serving; returns the bound port (useful with port 0). With `tls`, only clients holding a certificate of the fleet's CA get in. */
  listen(host: string, port: number, tls?: TlsMaterial): Promise<number> {
    return new Promise((resolve, reject) => {
      // Reflection (so grpcurl lists and describes the service) answers for this server's own services only.
      if (this.serviceNames.length > 0) reflectionService(this.serviceNames).addToServer(this.server);
      this.server.bindAsync(`${host}:${port}`, serverCredentials(tls), (error, bound) =>
        error ? reject(error) : resolve(bound),
      );
    });
  }

  /** Stops accepting calls, lets in-flight ones finish for up to `graceMs`, then cuts the rest. */
  shutdown(graceMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
