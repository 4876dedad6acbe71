import { buildAndSign } from '../../services/signer/src/adapters/c2pa/index.js';
import { localSignerFor, type TestCredential } from '../../services/signer/test/c2pa-fixtures.js';

/**
 * A JPEG signed with `credential` by c2pa itself, outside Cairn, as a partner's or a forger's own tool would sign
 * it: a plain manifest with no record of Cairn's, for the tests of what Cairn makes of another signer's files.
 */
export async function signedElsewhere(jpeg: Buffer, credential: TestCredential): Promise<Buffer> {
  const result = await buildAndSign({
    asset: jpeg,
    mimeType: 'image/jpeg',
    signer: localSignerFor(credential),
    claimGenerator: { name: 'cairn', version: 'test' },
    metadata: {},
  });
  return result.signed;
}
