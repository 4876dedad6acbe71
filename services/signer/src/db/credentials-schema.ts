import { sql } from 'drizzle-orm';
import { jsonb, pgPolicy, text, timestamp } from 'drizzle-orm/pg-core';
import { signer } from './namespace.js';

/**
 * Bring-your-own-key signing credentials (Enterprise): a tenant's certificate chain and the remote endpoint that
 * holds its private key. Cairn never sees the key; it sends the bytes to be signed, authenticated by an HMAC whose
 * secret is sealed here under SIGNER_KEK (bound to the row).
 */
export const signingCredentials = signer.table(
  'signing_credentials',
  {
    credentialId: text('credential_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    description: text('description').notNull().default(''),
    /** Leaf first, as it goes into the COSE x5chain. */
    chainPem: jsonb('chain_pem').$type<string[]>().notNull(),
    subject: text('subject').notNull(),
    notAfter: timestamp('not_after', { withTimezone: true }).notNull(),
    endpointUrl: text('endpoint_url').notNull(),
    hmacSecretSealed: text('hmac_secret_sealed').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    pgPolicy('signing_credentials_tenant', {
      for: 'all',
      using: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
      withCheck: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
    }),
  ],
);
