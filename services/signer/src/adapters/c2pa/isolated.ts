// The signer's side of its C2PA child processes (sign-child.ts): c2pa-rs parses and rewrites the upload there,
// and the key stays here. What a failure becomes:
//   - c2pa-rs refused the file (thrown in the child)       → C2paSignError, as in-process (the pipeline answers 400)
//   - the key backend failed (here, answering the child)    → its own CairnError (503 cairn.signer.unavailable)
//   - the child died or overran its budget                  → 503 cairn.sign.worker_failed; the signer stays up
import { CairnError } from '@cairn/errors';
import {
  asBuffer,
  childEntryBeside,
  TaskFailedError,
  WorkerCrashedError,
  WorkerPool,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '@cairn/isolate';
import type { ActiveSigningKey, C2paSigning } from '../../app/ports.js';
import { C2paSignError, timeStampUnavailable } from './sign.js';
import { isSignCall, isSignTaskResult, type SignTask } from './isolated-protocol.js';
import type { BuildAndSignInput, BuildAndSignResult } from './types.js';

export interface IsolatedC2paOptions {
  size: number;
  timeoutMs: number;
  maxOldSpaceMb: number;
  /** Child entry; default: sign-child.js / .ts next to this module (bundle or source). */
  entry?: string | URL;
}

const DEFAULT_RESERVE_SIZE = 10_240;

export class IsolatedC2pa implements C2paSigning {
  readonly pool: WorkerPool;

  constructor(options: IsolatedC2paOptions) {
    this.pool = new WorkerPool({
      name: 'c2pa-sign',
      entry: options.entry ?? childEntryBeside(import.meta.url, 'sign-child'),
      size: options.size,
      timeoutMs: options.timeoutMs,
      maxOldSpaceMb: options.maxOldSpaceMb,
    });
  }

  async buildAndSign(
    input: Omit<BuildAndSignInput, 'signer'>,
    key: ActiveSigningKey,
    /** tsaUrl: the RFC 3161 authority c2pa-rs stamps the signature with (the child POSTs to it). */
    options: { tsaUrl?: string; reserveSize?: number } = {},
  ): Promise<BuildAndSignResult> {
    const task: SignTask = {
      type: 'c2pa-sign',
      input,
      signer: {
        chainPem: [...key.chainPem],
        reserveSize: options.reserveSize ?? DEFAULT_RESERVE_SIZE,
        ...(options.tsaUrl ? { tsaUrl: options.tsaUrl } : {}),
      },
    };
    // c2pa-rs replaces an error thrown by the signing callback with its own; the backend's is kept to answer 503.
    let backendFailure: unknown;
    let value: unknown;
    try {
      value = await this.pool.run(task, {
        onCall: async (call) => {
          if (!isSignCall(call)) throw new Error('unknown call from the C2PA child');
          try {
            return await key.backend.sign(asBuffer(call.data));
          } catch (error) {
            backendFailure = error;
            throw error;
          }
        },
      });
    } catch (error) {
      if (backendFailure instanceof CairnError) throw backendFailure;
      if (error instanceof TaskFailedError && error.errorName === 'C2paTimeStampError')
        throw timeStampUnavailable(error);
      if (error instanceof TaskFailedError) throw new C2paSignError(error.message, { cause: error });
      if (error instanceof WorkerCrashedError || error instanceof WorkerTimeoutError) {
        throw new CairnError(
          'cairn.sign.worker_failed',
          'The signing worker failed on this file (it crashed or ran out of its time budget); the service is up. Retry once; if it fails again, the file cannot be signed.',
          {},
          { cause: error },
        );
      }
      if (error instanceof WorkerUnavailableError)
        throw new CairnError(
          'cairn.unavailable',
          'The signing workers cannot start; retry later.',
          {},
          { cause: error },
        );
      throw error;
    }
    if (!isSignTaskResult(value)) throw new C2paSignError('the C2PA child answered no signed asset');
    return {
      signed: asBuffer(value.signed),
      manifestStore: asBuffer(value.manifestStore),
      manifestLabel: value.manifestLabel,
    };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
