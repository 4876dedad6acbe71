import { createHash } from 'node:crypto';
import { CairnError } from '@cairn/errors';
import { isId, newId } from '@cairn/ids';
import { inspectManifestStore } from '../domain/manifest-store.js';
import { buildReceipt, receiptTbs, verifyReceipt, type ReceiptVerdict } from '../domain/receipt.js';
import type { BindOutcome, ReceiptSigning, StoredManifest, StoredManifests } from './ports.js';

export interface RepositoryDeps {
  repository: StoredManifests;
  receipts: ReceiptSigning;
  /** STORED_MANIFEST_MAX_BYTES. */
  maxManifestBytes: number;
  /** STORED_MANIFESTS_MAX_PER_TENANT. */
  maxManifestsPerTenant: number;
}

const MAX_VALUE_LENGTH = 4096;
/** A receipt handed in for checking is a few kilobytes (its chain); more is not one. */
const MAX_RECEIPT_JSON = 64 * 1024;

const notFound = () => new CairnError('cairn.not_found', 'No such stored manifest.');

function requireTenant(tenantId: string): string {
  if (!isId('tenant', tenantId)) throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
  return tenantId;
}

/** Stores a tenant's manifest store, binds its own soft-binding values and signs its receipt. */
export async function storeManifest(
  deps: RepositoryDeps,
  request: { tenantId: string; manifestStore: Uint8Array; repositoryUri: string },
): Promise<{ manifestId: string; receiptJson: string; bindingsIndexed: number }> {
  const tenantId = requireTenant(request.tenantId);
  if (!/^https?:\/\/\S+$/.test(request.repositoryUri) || request.repositoryUri.length > 2048)
    throw new CairnError('cairn.validation.invalid_body', 'repository_uri must be an http(s) URL');
  const bytes = Buffer.from(request.manifestStore);
  if (bytes.length === 0) throw new CairnError('cairn.validation.invalid_body', 'The manifest store is empty.');
  if (bytes.length > deps.maxManifestBytes)
    throw new CairnError(
      'cairn.validation.body_too_large',
      `A stored manifest store is at most ${deps.maxManifestBytes} bytes.`,
    );
  const inspected = inspectManifestStore(bytes);
  const manifestId = newId('storedManifest');
  const fields = {
    repositoryUri: request.repositoryUri.replace(/\/$/, ''),
    manifestId,
    manifestSha256: createHash('sha256').update(bytes).digest('hex'),
    storedAt: new Date().toISOString(),
  };
  const signed = await deps.receipts.sign(receiptTbs(fields));
  const receiptJson = JSON.stringify(buildReceipt(fields, signed.signature, signed.chainPem));
  const bindingsIndexed = await deps.repository.insert(
    { tenantId, manifestId, label: inspected.label, sha256: fields.manifestSha256, bytes, receipt: receiptJson },
    inspected.softBindings,
    deps.maxManifestsPerTenant,
  );
  if (bindingsIndexed === 'quota_exceeded')
    throw new CairnError(
      'cairn.resolution.quota_exceeded',
      `A tenant keeps at most ${deps.maxManifestsPerTenant} stored manifests; delete some first.`,
    );
  return { manifestId, receiptJson, bindingsIndexed };
}

async function stored(deps: RepositoryDeps, manifestId: string): Promise<StoredManifest> {
  if (!isId('storedManifest', manifestId)) throw notFound();
  const manifest = await deps.repository.get(manifestId);
  if (!manifest) throw notFound();
  return manifest;
}

export async function getStoredManifest(deps: RepositoryDeps, manifestId: string): Promise<Buffer> {
  return (await stored(deps, manifestId)).bytes;
}

export async function deleteStoredManifest(deps: RepositoryDeps, tenantId: string, manifestId: string): Promise<void> {
  requireTenant(tenantId);
  if (!isId('storedManifest', manifestId) || !(await deps.repository.delete(tenantId, manifestId))) throw notFound();
}

export async function putBinding(
  deps: RepositoryDeps,
  request: { tenantId: string; manifestId: string; alg: string; value: string; replace: boolean },
): Promise<void> {
  requireTenant(request.tenantId);
  const value = request.value.trim();
  const alg = request.alg.trim();
  if (!value || value.length > MAX_VALUE_LENGTH)
    throw new CairnError('cairn.validation.invalid_body', `bindingValue must be 1..${MAX_VALUE_LENGTH} characters`);
  if (alg.length > 128) throw new CairnError('cairn.validation.invalid_body', 'alg is at most 128 characters');
  if (!isId('storedManifest', request.manifestId)) throw notFound();
  const outcome: BindOutcome = await deps.repository.bind(
    request.tenantId,
    { manifestId: request.manifestId, alg, value },
    request.replace,
  );
  if (outcome === 'no_manifest') throw notFound();
  if (outcome === 'no_binding')
    throw new CairnError('cairn.not_found', 'This value is not bound to any of your manifests: POST it first.');
  if (outcome === 'bound_elsewhere')
    throw new CairnError(
      'cairn.resolution.binding_exists',
      'This value is already bound to another of your manifests; PUT moves it.',
    );
}

export async function findBindings(
  deps: RepositoryDeps,
  request: { alg: string; value: string; limit: number },
): Promise<string[]> {
  const value = request.value.trim();
  if (!value || value.length > MAX_VALUE_LENGTH) return [];
  return deps.repository.find(request.alg.trim(), value, Math.max(1, Math.min(request.limit || 10, 100)));
}

/** The receipt issued at storing time, checked again now (against the stored bytes and Cairn's roots). */
export async function getReceipt(
  deps: RepositoryDeps,
  manifestId: string,
): Promise<{ receiptJson: string } & ReceiptVerdict> {
  const manifest = await stored(deps, manifestId);
  const verdict = verifyReceipt(JSON.parse(manifest.receipt), expectation(manifest), await deps.receipts.roots());
  return { receiptJson: manifest.receipt, ...verdict };
}

export async function checkReceipt(
  deps: RepositoryDeps,
  manifestId: string,
  receiptJson: string,
): Promise<ReceiptVerdict> {
  const manifest = await stored(deps, manifestId);
  if (receiptJson.length > MAX_RECEIPT_JSON) return { verified: false, error: 'not a repository receipt' };
  let candidate: unknown;
  try {
    candidate = JSON.parse(receiptJson);
  } catch {
    return { verified: false, error: 'not a repository receipt' };
  }
  return verifyReceipt(candidate, expectation(manifest), await deps.receipts.roots());
}

const expectation = (manifest: StoredManifest) => ({
  manifestId: manifest.manifestId,
  manifestSha256: manifest.sha256,
});
