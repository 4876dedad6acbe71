import { CairnError } from '@cairn/errors';

/** What a sign sees when the CA cannot give it a key: 503, retry later (the cause is kept for the logs). */
export function unavailable(reason: string, cause?: unknown): CairnError {
  return new CairnError(
    'cairn.signer.unavailable',
    'The signing key is temporarily unavailable; retry later.',
    {},
    { cause: new Error(reason, { cause }) },
  );
}
