// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata polyfill loaded
// before the library itself; importing x509 only through this module guarantees the order.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto);

export { x509 };

/** ECDSA P-256 with SHA-256: the only algorithm of the Cairn hierarchy (COSE ES256 for the leaf). */
export const P256_SHA256: webcrypto.EcKeyGenParams & webcrypto.EcdsaParams = {
  name: 'ECDSA',
  namedCurve: 'P-256',
  hash: 'SHA-256',
};
