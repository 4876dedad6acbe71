// What the signer hands its C2PA child (sign-child.ts) and gets back. The input is buildAndSign's minus the
// signer object (a native handle that cannot cross processes): the child gets the certificate chain, and asks
// the parent for each signature.
import type { BuildAndSignInput } from './types.js';

export interface SignTask {
  type: 'c2pa-sign';
  input: Omit<BuildAndSignInput, 'signer'>;
  signer: { chainPem: string[]; reserveSize: number; tsaUrl?: string };
}

export interface SignTaskResult {
  signed: Uint8Array;
  manifestStore: Uint8Array;
  manifestLabel: string;
}

/** The child's request for a signature over c2pa-rs's Sig_structure bytes. */
export interface SignCall {
  type: 'sign';
  data: Uint8Array;
}

export function isSignTask(value: unknown): value is SignTask {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<SignTask>;
  return (
    v.type === 'c2pa-sign' &&
    typeof v.input === 'object' &&
    v.input !== null &&
    v.input.asset instanceof Uint8Array &&
    typeof v.signer === 'object' &&
    Array.isArray(v.signer?.chainPem)
  );
}

export function isSignCall(value: unknown): value is SignCall {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<SignCall>;
  return v.type === 'sign' && v.data instanceof Uint8Array;
}

export function isSignTaskResult(value: unknown): value is SignTaskResult {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<SignTaskResult>;
  return v.signed instanceof Uint8Array && v.manifestStore instanceof Uint8Array && typeof v.manifestLabel === 'string';
}
