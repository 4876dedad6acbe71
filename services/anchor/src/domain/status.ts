/** A batch's life: open (taking leaves) → closed (root fixed, not on chain yet) → pending (sent) → anchored. */
export type BatchStatus = 'open' | 'closed' | 'pending' | 'anchored';

/** What a caller sees: open and closed batches are both still "queued" for the chain. */
export type PublicStatus = 'queued' | 'pending' | 'anchored';
export const publicStatus = (status: BatchStatus): PublicStatus =>
  status === 'open' || status === 'closed' ? 'queued' : status;
