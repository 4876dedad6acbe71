/** Headers as a receiver gets them: a Fetch Headers, or a Node/Express-style object (names in any case). */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof Headers !== 'undefined' && headers instanceof Headers) return headers.get(name) ?? undefined;
  const entries = Object.entries(headers as Record<string, string | string[] | undefined>);
  const found = entries.find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(found) ? found[0] : found;
}

function hexToBytes(hex: string): Uint8Array | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) return undefined;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/**
 * Whether a webhook delivery is Cairn's: `Cairn-Signature` (or `X-Cairn-Signature`) is
 * `sha256=<hex HMAC-SHA256(raw body, secret)>`, or during a secret rotation's overlap several such values,
 * comma-separated (one per secret, the new first): true when any is this secret's. Pass the raw body exactly as received, before any JSON parsing.
 * The comparison is WebCrypto's HMAC verify, which is constant-time, so the answer's timing tells an attacker
 * nothing about how close a forged signature came. Works in Node 20 and browsers/edge runtimes.
 */
export async function verifyWebhookSignature(
  rawBody: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
): Promise<boolean> {
  const value = header(headers, 'cairn-signature') ?? header(headers, 'x-cairn-signature');
  // During a secret rotation's overlap the header lists one signature per secret, comma-separated.
  if (!value || !secret) return false;
  const signatures: Uint8Array[] = [];
  for (const part of value.split(',')) {
    const match = part.trim().match(/^sha256=([0-9a-fA-F]+)$/);
    const signature = match?.[1] ? hexToBytes(match[1]) : undefined;
    if (!signature) return false;
    signatures.push(signature);
  }
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'verify',
  ]);
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : rawBody;
  for (const signature of signatures) if (await crypto.subtle.verify('HMAC', key, signature, body)) return true;
  return false;
}
