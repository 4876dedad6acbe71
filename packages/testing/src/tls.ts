import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The files of one service's gRPC identity, as GRPC_TLS_CA / GRPC_TLS_CERT / GRPC_TLS_KEY take them. */
export interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

/** The certificate name of a service (packages/rpc serviceTlsName: the name its clients check). */
const tlsName = (service: string) => `cairn-${service}`;
/** openssl req's arguments for a new, unencrypted EC P-256 key (the CA's and each service's). */
const NEW_P256_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    throw new Error(
      `openssl ${args[0]} failed (is the openssl CLI installed?): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * A development CA and one certificate per service under `dir` (`npm run up` uses `.cairn/tls`), each
 * valid for its service name, `localhost` and 127.0.0.1, for both server and client use (mutual TLS). Files
 * already there are kept, so restarts keep their identities; a missing one is made. Development only: the
 * CA key sits beside the certificates, and the chart takes production certificates from a Secret.
 */
export async function makeDevPki(dir: string, services: ReadonlyArray<string>): Promise<Record<string, TlsFiles>> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const caCert = join(dir, 'ca.crt');
  const caKey = join(dir, 'ca.key');
  // A new CA invalidates every certificate the old one signed: they are all made again.
  const freshCa = !existsSync(caCert) || !existsSync(caKey);
  if (freshCa) {
    await openssl([
      'req',
      '-x509',
      ...NEW_P256_KEY,
      '-keyout',
      caKey,
      '-out',
      caCert,
      '-days',
      '3650',
      '-subj',
      '/CN=Cairn development CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
  }
  const files: Record<string, TlsFiles> = {};
  for (const service of services) {
    const cert = join(dir, `${service}.crt`);
    const key = join(dir, `${service}.key`);
    if (freshCa || !existsSync(cert) || !existsSync(key)) {
      const csr = join(dir, `${service}.csr`);
      const ext = join(dir, `${service}.ext`);
      await writeFile(
        ext,
        [
          `subjectAltName=DNS:${tlsName(service)},DNS:localhost,IP:127.0.0.1`,
          'basicConstraints=critical,CA:FALSE',
          'keyUsage=critical,digitalSignature',
          'extendedKeyUsage=serverAuth,clientAuth',
        ].join('\n'),
      );
      await openssl(['req', ...NEW_P256_KEY, '-keyout', key, '-out', csr, '-subj', `/CN=${tlsName(service)}`]);
      await openssl([
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        caCert,
        '-CAkey',
        caKey,
        '-CAcreateserial',
        '-out',
        cert,
        '-days',
        '825',
        '-extfile',
        ext,
      ]);
      await Promise.all([rm(csr, { force: true }), rm(ext, { force: true })]);
    }
    files[service] = { ca: caCert, cert, key };
  }
  return files;
}
