import { describe, expect, it } from '@jest/globals';
import { chainsToOneOf } from '../services/verifier/src/domain/cairn-link.js';
import { makeTestCredential } from '../services/signer/test/c2pa-fixtures.js';

// The verifier's credential check, on credentials made by the signer's test fixtures (hence a root test).
// The link between a manifest and a Cairn asset rests on this check: a chain that only looks like Cairn's must fail.
describe('chainsToOneOf', () => {
  it('accepts a leaf issued by the root, and the root itself at the end of the chain', async () => {
    const cairn = await makeTestCredential();
    expect(chainsToOneOf([cairn.leafCertPem], [cairn.caCertPem])).toBe(true);
    expect(chainsToOneOf([cairn.leafCertPem, cairn.caCertPem], [cairn.caCertPem])).toBe(true);
  });

  it('refuses a chain whose CA has the same name as the root but another key', async () => {
    const cairn = await makeTestCredential();
    const lookalike = await makeTestCredential();
    // Both test CAs are named "CN=Cairn Test Root CA, O=Cairn Test, C=US": the names match, the signatures do not.
    expect(chainsToOneOf([lookalike.leafCertPem], [cairn.caCertPem])).toBe(false);
    expect(chainsToOneOf([lookalike.leafCertPem, lookalike.caCertPem], [cairn.caCertPem])).toBe(false);
  });

  it('refuses a chain with a broken link, an empty chain, no roots and unparsable input', async () => {
    const cairn = await makeTestCredential();
    const other = await makeTestCredential();
    expect(chainsToOneOf([other.leafCertPem, cairn.caCertPem], [cairn.caCertPem])).toBe(false);
    expect(chainsToOneOf([], [cairn.caCertPem])).toBe(false);
    expect(chainsToOneOf([cairn.leafCertPem], [])).toBe(false);
    expect(chainsToOneOf(['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'], [cairn.caCertPem])).toBe(
      false,
    );
  });
});
