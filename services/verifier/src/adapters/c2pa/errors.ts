// Errors of C2PA reading that are not verdicts about a file; apart so the reader child can throw one without
// loading the parent's pool.

/** The readers cannot be started: an infrastructure failure, not a verdict about the file. */
export class C2paReaderUnavailableError extends Error {
  override readonly name = 'C2paReaderUnavailableError';
}

/** c2pa-rs refused the read's settings (e.g. a trust list it cannot load). */
export class C2paSettingsError extends Error {
  override readonly name = 'C2paSettingsError';
}
