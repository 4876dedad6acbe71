import { pgSchema } from 'drizzle-orm/pg-core';

/** The signer service's own Postgres schema; no other service reads it. */
export const signer = pgSchema('signer');
