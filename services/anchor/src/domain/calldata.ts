/** A 0x-prefixed hex string (viem's Hex, without importing the client library into pure code). */
type Hex = `0x${string}`;

/** The root a transaction carries, or undefined when its calldata is not exactly 32 bytes. */
export function rootFromCalldata(input: Hex): Hex | undefined {
  return /^0x[0-9a-fA-F]{64}$/.test(input) ? (input.toLowerCase() as Hex) : undefined;
}

/** An error's message with viem's details (what the node said), for logs and a batch's last_error. */
export function errorText(error: unknown): string {
  if (error instanceof Error)
    return `${error.message} ${'details' in error ? String((error as { details?: unknown }).details) : ''}`;
  return String(error);
}
