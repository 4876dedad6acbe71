import type { EnqueueEvent, PkiLogger } from '../ports.js';
import type { CertificateAuthority } from './certificate-authority.js';

export interface PkiMaintenanceOptions {
  /** Binds certificate.expiring to the outbox: `(tx, event) => outbox.enqueue(tx, event)`. */
  readonly enqueue: EnqueueEvent;
  /** Called after events were committed (e.g. `() => void outbox.flush()`). */
  readonly afterEnqueue?: () => void;
  /** Default one hour: rotation and notices work in days, an hour of lateness costs nothing. */
  readonly intervalMs?: number;
  readonly logger?: PkiLogger;
  readonly clock?: () => Date;
}

export interface PkiMaintenance {
  /** One pass: rotateIfDue, then notifyExpiring (so a certificate rotated away is not announced). Never throws. */
  runOnce(): Promise<void>;
  /** Stops the timer and waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * The periodic half of the PKI: runs one pass now and then every `intervalMs`. Every replica may run it;
 * the CA's locks make concurrent passes harmless (one rotates, one announces).
 */
export function startPkiMaintenance(ca: CertificateAuthority, options: PkiMaintenanceOptions): PkiMaintenance {
  const clock = options.clock ?? (() => new Date());
  let running: Promise<void> | undefined;

  const pass = async (): Promise<void> => {
    const now = clock();
    try {
      await ca.rotateIfDue(now);
    } catch (error) {
      options.logger?.warn({ err: error }, 'signing certificate rotation failed; will retry');
    }
    try {
      const announced = await ca.notifyExpiring(now, options.enqueue);
      if (announced > 0) options.afterEnqueue?.();
    } catch (error) {
      options.logger?.warn({ err: error }, 'certificate expiry notice failed; will retry');
    }
  };

  const runOnce = (): Promise<void> => {
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  };

  const timer = setInterval(() => void runOnce(), options.intervalMs ?? 3_600_000);
  timer.unref();
  void runOnce();

  return {
    runOnce,
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
