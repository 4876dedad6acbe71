import {
  issueTimeStampToken,
  parseTimeStampRequest,
  timeStampRejection,
  type TsaCredential,
} from './time-stamp-token.js';

/**
 * Cairn's time-stamping authority over HTTP (RFC 3161 §3.4): POST `<basePath>` with an `application/timestamp-query`
 * body, answered `application/timestamp-reply`. A request that is not a time-stamp query at all is a plain HTTP
 * error (404/405/413/415); one that is but cannot be granted is a TimeStampResp with status rejection and the
 * RFC 3161 failure (badAlg, badDataFormat, badRequest, unacceptedPolicy, unacceptedExtension, systemFailure).
 *
 * Time comes from the host clock (operators run NTP or chrony; docs/operations.md): genTime is whole seconds and
 * the stated accuracy is one second.
 */
export interface TsaResponderDeps {
  /** The active TSA credential; throws when there is none (answered systemFailure). */
  credential(): Promise<TsaCredential>;
  /** Path the TSA is mounted at (the pathname of TSA_PUBLIC_URL). Default '/tsa'. */
  readonly basePath?: string;
  /**
   * A path only the signer knows (random per process), where its own signs are stamped: never limited, so no
   * outside caller can starve them. Absent: the signer's signs use the public path.
   */
  readonly ownPath?: string;
  /** Grants per second on the public path (burst twice that); 0: the public path is not served. Absent: unlimited. */
  readonly publicRequestsPerSecond?: number;
  readonly clock?: () => Date;
  /** Failures that became systemFailure answers (for the log). */
  readonly onError?: (error: unknown) => void;
}

const ACCURACY_SECONDS = 1;

/** The DER TimeStampResp answering `requestDer`. Never throws. */
export async function answerTimeStampRequest(requestDer: Uint8Array, deps: TsaResponderDeps): Promise<Buffer> {
  const parsed = parseTimeStampRequest(requestDer);
  if (!parsed.ok) return timeStampRejection(parsed.failure, parsed.text);
  try {
    const credential = await deps.credential();
    return await issueTimeStampToken(parsed.request, credential, {
      genTime: (deps.clock ?? (() => new Date()))(),
      accuracySeconds: ACCURACY_SECONDS,
    });
  } catch (error) {
    deps.onError?.(error);
    return timeStampRejection('systemFailure', 'the time-stamping authority cannot sign now; retry later');
  }
}
