import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';

/** PEM bytes of the fleet's CA and one service's certificate and key: mutual TLS between services. */
export interface TlsMaterial {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** Reads the three PEM files (GRPC_TLS_CA / _CERT / _KEY), naming the one that cannot be read. */
export function readTlsFiles(files: { ca: string; cert: string; key: string }): TlsMaterial {
  const read = (what: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new Error(`cannot read ${what} ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  return {
    ca: read('GRPC_TLS_CA', files.ca),
    cert: read('GRPC_TLS_CERT', files.cert),
    key: read('GRPC_TLS_KEY', files.key),
  };
}

/**
 * The name a service's certificate carries (a DNS subjectAltName) and its clients check, whatever address
 * they dial: a pod that can reach the signer's port but holds the webhook's certificate cannot pose as it.
 * It is also the Kubernetes Service name the chart gives each service.
 */
export function serviceTlsName(service: string): string {
  return `cairn-${service}`;
}

/** Server side: without TLS material, plaintext (development); with it, TLS that demands a client certificate from the same CA. */
export function serverCredentials(tls: TlsMaterial | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  return grpc.ServerCredentials.createSsl(tls.ca, [{ cert_chain: tls.cert, private_key: tls.key }], true);
}

export function channelCredentials(tls: TlsMaterial | undefined): grpc.ChannelCredentials {
  if (!tls) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(tls.ca, tls.key, tls.cert);
}
