import type { signerV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import type { ReceiptSigning } from '../app/ports.js';

/** Receipts are signed by the signer (Cairn's signing key never leaves it); its roots are asked at most hourly. */
export function signerReceipts(signer: ClientOf<typeof signerV1.SignerService>): ReceiptSigning {
  let roots: { at: number; value: Promise<readonly string[]> } | undefined;
  return {
    sign: async (tbs) => {
      const answer = await signer.signReceipt({ tbs }, { deadlineMs: 10_000 });
      return { signature: answer.signature, chainPem: answer.chainPem };
    },
    roots: () => {
      if (!roots || Date.now() - roots.at > 3_600_000) {
        const value = signer.getTrustAnchors({}, { deadlineMs: 10_000 }).then((r) => r.rootPem as readonly string[]);
        roots = { at: Date.now(), value };
        value.catch(() => (roots = undefined));
      }
      return roots.value;
    },
  };
}
