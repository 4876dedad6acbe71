import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethod,
  type DescService,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';

function methodDefinition(service: DescService, method: DescMethod): MethodDefinition<unknown, unknown> {
  const input: DescMessage = method.input;
  const output: DescMessage = method.output;
  return {
    path: `/${service.typeName}/${method.name}`,
    requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
    responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
    requestSerialize: (value: unknown) =>
      Buffer.from(toBinary(input, create(input, value as MessageInitShape<DescMessage>))),
    requestDeserialize: (bytes: Buffer) => fromBinary(input, bytes),
    responseSerialize: (value: unknown) =>
      Buffer.from(toBinary(output, create(output, value as MessageInitShape<DescMessage>))),
    responseDeserialize: (bytes: Buffer) => fromBinary(output, bytes),
    originalName: method.localName,
  };
}

/** The grpc-js service definition of a protobuf-es service descriptor, keyed by the method's local name. */
export function grpcServiceDefinition(service: DescService): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) definition[method.localName] = methodDefinition(service, method);
  return definition;
}

export type { MessageShape, MessageInitShape };
