import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { loadFileDescriptorSetFromBuffer, loadSync, type PackageDefinition } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { FILE_DESCRIPTOR_SET_BASE64 } from '@cairn/proto';
import type { TlsMaterial } from './tls.js';

let definition: PackageDefinition | undefined;

/**
 * gRPC server reflection over the protos' FileDescriptorSet (built by `pnpm gen` with buf, doc comments kept),
 * limited to `services`: a caller learns the methods of the server it reached, not the whole fleet's.
 */
export function reflectionService(services: string[]): ReflectionService {
  definition ??= loadFileDescriptorSetFromBuffer(Buffer.from(FILE_DESCRIPTOR_SET_BASE64, 'base64'));
  return new ReflectionService(definition, { services });
}

/** What a server says about itself through reflection: each service and its methods. */
export interface ReflectedService {
  name: string;
  methods: string[];
}

interface ReflectionAnswer {
  listServicesResponse?: { service: Array<{ name: string }> };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  errorResponse?: { errorCode: number; errorMessage: string };
}

/**
 * A reflection client (grpc.reflection.v1, as grpcurl speaks it): lists the services at `address` and, for each,
 * the methods of the file descriptor the server sends for it. For tools and tests; plaintext unless `tls` is given.
 */
export async function listByReflection(address: string, tls?: TlsMaterial): Promise<ReflectedService[]> {
  const protoPath = join(
    dirname(createRequire(import.meta.url).resolve('@grpc/reflection')),
    '..',
    'proto',
    'grpc',
    'reflection',
    'v1',
    'reflection.proto',
  );
  const pkg = grpc.loadPackageDefinition(
    loadSync(protoPath, { keepCase: false, longs: String, enums: String, defaults: false, oneofs: true }),
  );
  const Client = (
    pkg as unknown as { grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } } }
  ).grpc.reflection.v1.ServerReflection;
  const credentials = tls ? grpc.credentials.createSsl(tls.ca, tls.key, tls.cert) : grpc.credentials.createInsecure();
  const client = new Client(address, credentials);
  const ask = (request: Record<string, unknown>): Promise<ReflectionAnswer> =>
    new Promise((resolve, reject) => {
      const call = (
        client as unknown as {
          serverReflectionInfo(): grpc.ClientDuplexStream<Record<string, unknown>, ReflectionAnswer>;
        }
      ).serverReflectionInfo();
      call.on('data', (answer: ReflectionAnswer) => {
        resolve(answer);
        call.end();
      });
      call.on('error', reject);
      call.write(request);
    });
  try {
    const listed = await ask({ listServices: '' });
    if (!listed.listServicesResponse)
      throw new Error(`reflection: ${listed.errorResponse?.errorMessage ?? 'no service list'}`);
    const out: ReflectedService[] = [];
    for (const { name } of listed.listServicesResponse.service) {
      const files = await ask({ fileContainingSymbol: name });
      const descriptors = (files.fileDescriptorResponse?.fileDescriptorProto ?? []).map((bytes) =>
        fromBinary(FileDescriptorProtoSchema, bytes),
      );
      const service = descriptors
        .flatMap((f) => f.service.map((s) => ({ full: f.package ? `${f.package}.${s.name}` : s.name, s })))
        .find((x) => x.full === name);
      out.push({ name, methods: service ? service.s.method.map((m) => m.name) : [] });
    }
    return out;
  } finally {
    client.close();
  }
}
