// How a C2PA signature fails, as the signing adapter reports it and the sign use case tells the cases apart.
import { CairnError } from '@cairn/errors';

/** The sign input is not what a manifest can be built from (metadata, claim generator, soft binding). */
export class C2paInputError extends Error {
  override readonly name = 'C2paInputError';
}

export class C2paSignError extends Error {
  override readonly name = 'C2paSignError';
}

/**
 * The time-stamping authority failed the sign (unreachable, an HTTP error, a rejection or a token c2pa-rs refused).
 * c2pa-rs requests the time-stamp itself while it signs, and reports a failure as a plain error whose message is
 * its TimeStampError's; those messages are what tells it apart from a file it cannot sign.
 */
export class C2paTimeStampError extends Error {
  override readonly name = 'C2paTimeStampError';
}

/** What a sign whose time-stamp failed answers: retry later (503), never a manifest without its time-stamp. */
export function timeStampUnavailable(cause: unknown): CairnError {
  return new CairnError(
    'cairn.signer.unavailable',
    'The time-stamping authority did not answer; nothing was signed. Retry later.',
    {},
    { cause },
  );
}
