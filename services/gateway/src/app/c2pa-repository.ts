import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import type { SoftBindingClient } from './ports.js';

/** A repository receipt as the API answers it: the receipt's JSON, plus its verification status when asked. */
export type ReceiptAnswer = Record<string, unknown> & { verified?: boolean; error?: string };

/**
 * The store side of the Soft Binding Resolution API: manifests a tenant made elsewhere, kept by the soft-binding
 * service (its repository tables), with the values bound to them and Cairn's receipts. A stored manifest is the
 * uploader's claim, not Cairn's: Cairn checks its structure, never signs it, and never consults it when verifying.
 */
export class ManifestRepositoryApi {
  constructor(
    private readonly softbinding: SoftBindingClient,
    /** The resolution API's public base (…/c2pa/v1), named in receipts. */
    private readonly apiBase: string,
  ) {}

  async store(
    tenantId: string,
    manifestStore: Buffer,
  ): Promise<{ manifestId: string; receipt: ReceiptAnswer; bindingsIndexed: number }> {
    const stored = await this.softbinding.storeManifest(
      { tenantId, manifestStore, repositoryUri: this.apiBase },
      { deadlineMs: 30_000 },
    );
    return {
      manifestId: stored.manifestId,
      receipt: JSON.parse(stored.receiptJson) as ReceiptAnswer,
      bindingsIndexed: stored.bindingsIndexed,
    };
  }

  /** Undefined for an id that is not a stored manifest's (`sm_…`): Cairn's own manifests are the signer's. */
  async manifest(manifestId: string): Promise<Buffer | undefined> {
    if (!isStoredManifestId(manifestId)) return undefined;
    const { manifestStore } = await this.softbinding.getStoredManifest({ manifestId }, { deadlineMs: 10_000 });
    return Buffer.from(manifestStore);
  }

  async delete(tenantId: string, manifestId: string): Promise<void> {
    await this.softbinding.deleteStoredManifest({ tenantId, manifestId }, { deadlineMs: 10_000 });
  }

  async bind(
    tenantId: string,
    binding: { manifestId: string; bindingValue: string; alg?: string | undefined },
    replace: boolean,
  ): Promise<void> {
    await this.softbinding.putBinding(
      {
        tenantId,
        manifestId: binding.manifestId,
        alg: binding.alg ?? '',
        value: binding.bindingValue,
        replace,
      },
      { deadlineMs: 10_000 },
    );
  }

  /** The receipt issued when the manifest was stored, with whether it verifies now. */
  async receipt(manifestId: string): Promise<ReceiptAnswer> {
    requireStored(manifestId);
    const answer = await this.softbinding.getReceipt({ manifestId }, { deadlineMs: 10_000 });
    return {
      ...(JSON.parse(answer.receiptJson) as ReceiptAnswer),
      verified: answer.verified,
      ...(answer.verified ? {} : { error: answer.error }),
    };
  }

  /** Checks a receipt the caller holds against the stored manifest; answers it with `verified` (and `error`). */
  async verifyReceipt(manifestId: string, receipt: Record<string, unknown>): Promise<ReceiptAnswer> {
    requireStored(manifestId);
    const { verified, error } = await this.softbinding.verifyReceipt(
      { manifestId, receiptJson: JSON.stringify(withoutVerdict(receipt)) },
      { deadlineMs: 10_000 },
    );
    return { ...receipt, verified, ...(verified ? {} : { error }) };
  }
}

export function isStoredManifestId(manifestId: string): boolean {
  return isId('storedManifest', manifestId);
}

function requireStored(manifestId: string): void {
  // Cairn's own manifests (m_…, urn:…) carry no repository receipt: the signed manifest is its own proof.
  if (!isStoredManifestId(manifestId)) throw new CairnError('cairn.not_found', 'No receipt: not a stored manifest.');
}

/** A receipt handed back as GET answered it carries `verified`/`error`: those are the answer's, not the receipt's. */
function withoutVerdict(receipt: Record<string, unknown>): Record<string, unknown> {
  const { verified: _verified, error: _error, ...rest } = receipt;
  return rest;
}
