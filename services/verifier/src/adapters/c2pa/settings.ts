// c2pa-rs settings for one read. c2pa-node 0.8 builds a fresh c2pa-rs Context from the settings string given
// to each Reader (neon_reader.rs → utils::parse_settings), so the trust list travels with the read and two
// reads with different lists cannot see each other's. The string goes to c2pa-rs as is: keys are snake_case,
// and c2pa-rs ignores unknown keys silently, so a misspelt key here would quietly fall back to a default.
import { X509Certificate } from 'node:crypto';
import { ByteBoundedLru } from '@cairn/runtime';
import { framedDigest } from '../../domain/framed-digest.js';

export class TrustListError extends Error {
  override readonly name = 'TrustListError';
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Every certificate of the list as one PEM bundle. Checked here so that a bad tenant list is reported as a
 * configuration error rather than surfacing from c2pa-rs as a failed read of the customer's file.
 */
export function trustBundle(trustAnchorsPem: readonly string[]): string {
  const certs: string[] = [];
  trustAnchorsPem.forEach((entry, index) => {
    const found = entry.match(PEM_CERT) ?? [];
    if (found.length === 0) throw new TrustListError(`trust anchor ${index} holds no PEM certificate`);
    for (const pem of found) {
      try {
        new X509Certificate(pem);
      } catch {
        throw new TrustListError(`trust anchor ${index} is not a parsable X.509 certificate`);
      }
      certs.push(pem);
    }
  });
  return certs.join('\n');
}

/**
 * The settings string of a read under this trust list. Every read passes the list in force (the default one is about
 * 50 certificates), and checking each of them as X.509 took several milliseconds of CPU per read, about the whole
 * bare read: the string is a function of the list alone, so it is made once per list (keyed by its framedDigest);
 * a list that fails the check is not kept and fails again.
 */
export function readerSettingsJson(trustAnchorsPem: readonly string[]): string {
  const key = framedDigest(trustAnchorsPem);
  const known = settingsByList.get(key);
  if (known !== undefined) return known;
  const settings = settingsFor(trustAnchorsPem);
  settingsByList.set(key, settings, settings.length * 2);
  return settings;
}

/**
 * Bounded by the strings it keeps (the default list's is about 100 KB): the default list and each enterprise
 * tenant's own, least recently used out (a list changes rarely; a changed one is a new key).
 */
const settingsByList = new ByteBoundedLru<string>(8 * 1024 * 1024);

function settingsFor(trustAnchorsPem: readonly string[]): string {
  const bundle = trustBundle(trustAnchorsPem);
  return JSON.stringify({
    verify: {
      verify_after_reading: true,
      verify_trust: true,
      verify_timestamp_trust: true,
      // No network from the parser: OCSP is judged from a stapled response only, and a remote manifest
      // reference is reported, not followed.
      ocsp_fetch: false,
      remote_manifest_fetch: false,
    },
    // An empty allow-list makes c2pa-rs's HTTP resolver refuse every URI (http/restricted.rs: no pattern
    // matches), a second lock behind the two flags above.
    core: { allowed_network_hosts: [] },
    // No anchors = nothing is trusted; c2pa-rs ships no default list (Trust::default is all None).
    trust: bundle ? { trust_anchors: bundle } : {},
  });
}
