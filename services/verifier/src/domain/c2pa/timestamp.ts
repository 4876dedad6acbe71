// The RFC 3161 time-stamp of a claim signature (C2PA: the COSE unprotected header `sigTst2` or `sigTst`, each a
// `tstTokens` array of CMS SignedData), read far enough to say when it was made and by which TSA certificate: the
// `timeStampInfo` of a crJSON signature. c2pa-rs checks the token; this only describes it. Bounded DER walking over
// attacker-controlled bytes: every length must fit inside its parent.
import { X509Certificate } from 'node:crypto';
import { decodeCbor, isTagged, type CborValue } from './cbor.js';

interface Tlv {
  tag: number;
  start: number;
  contentStart: number;
  end: number;
}

/** One DER element at `offset` inside [.., limit); undefined when it does not fit. */
function tlv(der: Uint8Array, offset: number, limit: number): Tlv | undefined {
  if (offset + 2 > limit) return undefined;
  const tag = der[offset] as number;
  let length = der[offset + 1] as number;
  let contentStart = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets === 0 || octets > 4 || contentStart + octets > limit) return undefined;
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + (der[contentStart + i] as number);
    contentStart += octets;
  }
  const end = contentStart + length;
  return end <= limit ? { tag, start: offset, contentStart, end } : undefined;
}

function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = parent.contentStart; offset < parent.end;) {
    const child = tlv(der, offset, parent.end);
    if (!child) return out;
    out.push(child);
    offset = child.end;
  }
  return out;
}

const SEQUENCE = 0x30;
const CONTEXT_0 = 0xa0;
const OCTET_STRING = 0x04;
const GENERALIZED_TIME = 0x18;
const TIME_STAMPING = '1.3.6.1.5.5.7.3.8';

/** GeneralizedTime `YYYYMMDDHHMMSS[.f…]Z` as ISO 8601. */
function generalizedTime(text: string): string | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\.\d{1,9})?Z$/.exec(text);
  if (!m) return undefined;
  const iso = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[7] ? m[7].slice(0, 4) : ''}Z`;
  return Number.isNaN(Date.parse(iso)) ? undefined : new Date(iso).toISOString();
}

export interface TimeStampToken {
  /** genTime of the TSTInfo (ISO 8601). */
  time: string;
  /** The TSA's certificate (DER): the time-stamping one among the token's certificates. */
  tsaCertificate: Uint8Array;
}

/**
 * A TimeStampResp (status, then the token: what C2PA signers embed) or a bare token, ContentInfo(SignedData) → genTime
 * and the TSA's certificate; undefined when it is not of that shape.
 */
export function readTimeStampToken(der: Uint8Array): TimeStampToken | undefined {
  const outer = tlv(der, 0, der.length);
  if (outer?.tag !== SEQUENCE) return undefined;
  const [first, second] = children(der, outer);
  // A ContentInfo starts with its content type (an OID); a TimeStampResp with its PKIStatusInfo (a SEQUENCE).
  const contentInfo = first?.tag === SEQUENCE ? second : outer;
  if (contentInfo?.tag !== SEQUENCE) return undefined;
  const explicit = children(der, contentInfo).find((c) => c.tag === CONTEXT_0);
  const signedData = explicit ? children(der, explicit)[0] : undefined;
  if (signedData?.tag !== SEQUENCE) return undefined;
  const parts = children(der, signedData);
  // version, digestAlgorithms, encapContentInfo, [0] certificates, ...
  const encap = parts[2];
  if (encap?.tag !== SEQUENCE) return undefined;
  const eContent = children(der, encap).find((c) => c.tag === CONTEXT_0);
  const octets = eContent ? children(der, eContent)[0] : undefined;
  if (octets?.tag !== OCTET_STRING) return undefined;
  const tstInfo = tlv(der, octets.contentStart, octets.end);
  if (tstInfo?.tag !== SEQUENCE) return undefined;
  const genTime = children(der, tstInfo).find((c) => c.tag === GENERALIZED_TIME);
  const time = genTime
    ? generalizedTime(Buffer.from(der.subarray(genTime.contentStart, genTime.end)).toString('latin1'))
    : undefined;
  const certificates = parts.slice(3).find((c) => c.tag === CONTEXT_0);
  if (!time || !certificates) return undefined;
  const certs = children(der, certificates)
    .filter((c) => c.tag === SEQUENCE)
    .map((c) => der.subarray(c.start, c.end));
  const parsed = certs.flatMap((bytes) => {
    try {
      return [{ bytes, cert: new X509Certificate(Buffer.from(bytes)) }];
    } catch {
      return [];
    }
  });
  // Node's `keyUsage` is the certificate's extended key usages.
  const tsa = parsed.find((p) => (p.cert.keyUsage ?? []).includes(TIME_STAMPING)) ?? parsed.find((p) => !p.cert.ca);
  return tsa ? { time, tsaCertificate: tsa.bytes } : undefined;
}

/** The first time-stamp token of a COSE_Sign1's unprotected header (`sigTst2`, else `sigTst`). */
export function coseTimeStampToken(cose: Uint8Array): TimeStampToken | undefined {
  let message: CborValue = decodeCbor(cose);
  if (isTagged(message)) message = message.value;
  const unprotected = Array.isArray(message) ? message[1] : undefined;
  if (!(unprotected instanceof Map)) return undefined;
  for (const key of ['sigTst2', 'sigTst']) {
    const tst = unprotected.get(key);
    const tokens = tst instanceof Map ? tst.get('tstTokens') : undefined;
    const first: CborValue = Array.isArray(tokens) ? tokens[0] : undefined;
    const val = first instanceof Map ? first.get('val') : undefined;
    if (val instanceof Uint8Array) return readTimeStampToken(val);
  }
  return undefined;
}
