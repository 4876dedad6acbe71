// An operator's own RFC 3161 time-stamping authority, for tests of TSA_URL: its own root and TSA certificate
// (made with the signer's certificate profiles) behind a loopback HTTP server that answers like any TSA, or fails.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTsaCertificate, generateP256KeyPair, newSerialHex, parseCertificatePem } from '../src/domain/pki/ca.js';
import { createRootAndIntermediate } from './fixtures/hierarchy.js';
import type { TsaCredential } from '../src/domain/pki/time-stamp-token.js';
import { answerTimeStampRequest } from '../src/domain/pki/time-stamp-answer.js';

export interface ExternalTsa {
  url: string;
  rootPem: string;
  /** Time-stamp requests received. */
  requests: number;
  /** 'grant': answers tokens; 'http_error': answers 500, as a TSA down behind its proxy; 'hang': never answers. */
  mode: 'grant' | 'http_error' | 'hang';
  close(): Promise<void>;
}

/** A TSA hierarchy of its own (root → intermediate → TSA certificate) made with the signer's profiles. */
export async function makeTsaHierarchy(org: string): Promise<{ rootPem: string; credential: TsaCredential }> {
  const now = new Date();
  const { root, intermediate: ca, intermediateKeys: caKeys } = await createRootAndIntermediate(org, now);
  const tsaKeys = await generateP256KeyPair();
  const tsa = await createTsaCertificate({
    org,
    sequence: 1,
    publicKey: tsaKeys.publicKey,
    issuer: { certificate: parseCertificatePem(ca.pem), privateKey: caKeys.privateKey },
    serialHex: newSerialHex(),
    now,
    validityDays: 30,
  });
  return {
    rootPem: root.pem,
    credential: { certificateDer: tsa.der, issuerCertificateDer: ca.der, privateKey: tsaKeys.privateKey },
  };
}

export async function startExternalTsa(org = 'Acme Time Services'): Promise<ExternalTsa> {
  const { rootPem, credential } = await makeTsaHierarchy(org);
  const state = { requests: 0, mode: 'grant' as ExternalTsa['mode'] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.requests += 1;
      if (state.mode === 'hang') return;
      if (state.mode === 'http_error') return void res.writeHead(500).end();
      void answerTimeStampRequest(Buffer.concat(chunks), { credential: async () => credential }).then((reply) =>
        res.writeHead(200, { 'content-type': 'application/timestamp-reply' }).end(reply),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rfc3161`,
    rootPem,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}
