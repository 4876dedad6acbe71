import { verify as verifySignature, X509Certificate } from 'node:crypto';
import { z } from 'zod';

/**
 * Repository receipts (the C2PA Soft Binding API's `Receipt`, `@type` org.c2pa.manifest-receipt): Cairn's signed
 * statement that it holds a manifest store with these exact bytes, under this id, since this time. The signature
 * (ES256 by Cairn's signing key, chain in `anchor.parameters.x5chain`) covers `receiptTbs` of those fields.
 */
export const RECEIPT_TYPE = 'org.c2pa.manifest-receipt';
/** The label the to-be-signed bytes start with: a receipt signature can never pass for another Cairn signature. */
export const RECEIPT_LABEL = 'c2pa.repository-receipt';
const C2PA_CONTEXT = 'https://c2pa.org/specifications/specifications/2.4/softbinding/Decoupled.html';

export interface ReceiptFields {
  /** The resolution API's base (…/c2pa/v1). */
  repositoryUri: string;
  manifestId: string;
  /** SHA-256 of the stored bytes, hex. */
  manifestSha256: string;
  /** ISO 8601. */
  storedAt: string;
}

/** The bytes a receipt's signature covers: a JSON array in a fixed order (no canonicalisation needed). */
export function receiptTbs(fields: ReceiptFields): Buffer {
  return Buffer.from(
    JSON.stringify([RECEIPT_LABEL, fields.repositoryUri, fields.manifestId, fields.manifestSha256, fields.storedAt]),
    'utf8',
  );
}

export const receiptSchema = z.object({
  '@context': z
    .object({ c2pa: z.string().max(2048), receipt: z.string().max(2048) })
    .partial()
    .optional(),
  '@type': z.literal(RECEIPT_TYPE),
  repository: z.object({ uri: z.string().max(2048), manifestId: z.string().max(256) }),
  anchor: z.object({
    uri: z.string().max(4096),
    proof: z.object({ alg: z.literal('ES256'), value: z.string().max(1024) }),
    parameters: z.object({
      manifestSha256: z.string().regex(/^[0-9a-f]{64}$/),
      storedAt: z.string().max(64),
      x5chain: z.array(z.string().max(8192)).min(1).max(4),
    }),
  }),
});
export type Receipt = z.infer<typeof receiptSchema>;

export function buildReceipt(fields: ReceiptFields, signature: Uint8Array, chainPem: readonly string[]): Receipt {
  return {
    '@context': { c2pa: C2PA_CONTEXT, receipt: `${fields.repositoryUri}/manifests/${fields.manifestId}/receipts` },
    '@type': RECEIPT_TYPE,
    repository: { uri: fields.repositoryUri, manifestId: fields.manifestId },
    anchor: {
      uri: `${fields.repositoryUri}/manifests/${encodeURIComponent(fields.manifestId)}`,
      proof: { alg: 'ES256', value: Buffer.from(signature).toString('base64') },
      parameters: { manifestSha256: fields.manifestSha256, storedAt: fields.storedAt, x5chain: [...chainPem] },
    },
  };
}

export type ReceiptVerdict = { verified: true } | { verified: false; error: string };

/**
 * Checks a receipt someone holds against the manifest stored under `expected.manifestId`: the shape, that it names
 * that manifest and its bytes' hash, that its chain leads to one of Cairn's roots, that the leaf was valid at
 * storedAt, and the signature. Revocation is not checked: a receipt stays a statement of what was stored then.
 */
export function verifyReceipt(
  candidate: unknown,
  expected: { manifestId: string; manifestSha256: string },
  rootsPem: readonly string[],
): ReceiptVerdict {
  const parsed = receiptSchema.safeParse(candidate);
  if (!parsed.success) return { verified: false, error: 'not a repository receipt' };
  const receipt = parsed.data;
  if (receipt.repository.manifestId !== expected.manifestId)
    return { verified: false, error: 'the receipt is for another manifest' };
  if (receipt.anchor.parameters.manifestSha256 !== expected.manifestSha256)
    return { verified: false, error: 'the receipt names other bytes than the stored manifest' };
  let chain: X509Certificate[];
  let roots: X509Certificate[];
  try {
    chain = receipt.anchor.parameters.x5chain.map((pem) => new X509Certificate(pem));
    roots = rootsPem.map((pem) => new X509Certificate(pem));
  } catch {
    return { verified: false, error: 'a certificate of the chain does not parse' };
  }
  for (let i = 0; i + 1 < chain.length; i++)
    if (!chain[i]!.verify(chain[i + 1]!.publicKey)) return { verified: false, error: 'the chain is broken' };
  const top = chain.at(-1)!;
  if (!roots.some((root) => top.verify(root.publicKey)))
    return { verified: false, error: 'the chain does not lead to a Cairn root' };
  // The key must have been certified when the receipt says it signed (a backdated storedAt outside the leaf's
  // validity is refused even when the signature checks).
  const storedAt = Date.parse(receipt.anchor.parameters.storedAt);
  const leaf = chain[0]!;
  if (Number.isNaN(storedAt) || storedAt < Date.parse(leaf.validFrom) || storedAt > Date.parse(leaf.validTo))
    return { verified: false, error: 'storedAt is outside the signing certificate’s validity' };
  const tbs = receiptTbs({
    repositoryUri: receipt.repository.uri,
    manifestId: receipt.repository.manifestId,
    manifestSha256: receipt.anchor.parameters.manifestSha256,
    storedAt: receipt.anchor.parameters.storedAt,
  });
  const signature = Buffer.from(receipt.anchor.proof.value, 'base64');
  const ok = verifySignature('sha256', tbs, { key: chain[0]!.publicKey, dsaEncoding: 'ieee-p1363' }, signature);
  return ok ? { verified: true } : { verified: false, error: 'the signature does not verify' };
}
