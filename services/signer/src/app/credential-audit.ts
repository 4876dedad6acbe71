import type { Tx } from '@cairn/db';
import { newEvent, secretFingerprint, type AdminAction, type AnyEvent } from '@cairn/events';
import type { CredentialRow } from './ports.js';

/** Where an admin change's audit event goes: the signer's outbox, in the transaction of the change. */
export interface AdminAuditOutbox {
  enqueue(tx: Tx, event: AnyEvent): Promise<void>;
  flush(): Promise<void>;
}

/** A credential's settings as its audit entry shows them: the HMAC secret only as its fingerprint. */
export function credentialSettings(row: CredentialRow, hmacSecret?: string): Record<string, unknown> {
  return {
    subject: row.subject,
    not_after: row.notAfter.toISOString(),
    endpoint_url: row.endpointUrl,
    description: row.description,
    ...(hmacSecret ? { hmac_secret_sha256: secretFingerprint(hmacSecret) } : {}),
  };
}

export function credentialChanged(
  action: Extract<AdminAction, `signing_credential.${string}`>,
  row: CredentialRow,
  actorKeyId: string | null,
  states: { before: Record<string, unknown> | null; after: Record<string, unknown> | null },
): AnyEvent {
  return newEvent('admin.changed', row.tenantId, {
    action,
    object_type: 'signing_credential',
    object_id: row.credentialId,
    actor_key_id: actorKeyId,
    ...states,
  });
}
