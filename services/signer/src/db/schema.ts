import { outboxTable, processedEventsTable } from '@cairn/db';
import { signer } from './namespace.js';

export { signer };
export const outbox = outboxTable(signer);
export const processedEvents = processedEventsTable(signer);

export * from './pki-schema.js';
export * from './assets-schema.js';
export * from './credentials-schema.js';
