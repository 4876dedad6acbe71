import { isIP } from 'node:net';
import { z } from 'zod';
import { disallowedReason } from '@cairn/outbound';

/** Names that resolve only inside a cluster or a site: `x.svc`, `x.ns.svc.cluster.local`, mDNS, `*.internal`. */
const CLUSTER_LOCAL_SUFFIXES = ['.svc', '.cluster.local', '.local', '.internal', '.localhost'];

/**
 * Why `value` cannot be the address the outside world is given (a manifest_uri, a verifier_url, the OCSP URL
 * written into every certificate), or undefined when it can: it must be https, and its host must be a name or
 * address reachable from anywhere. IP literals are classified by @cairn/outbound (the same table that keeps
 * outbound requests off internal addresses), IPv4-mapped and NAT64 forms included.
 */
export function publicUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:') return `must be https (it is ${url.protocol.replace(/:$/, '')})`;
  // URL has already normalised the host: lower case, IPv4 in dotted form (even from 0x7f.1 or 2130706433).
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (isIP(host)) {
    const reason = disallowedReason(host);
    return reason ? `names a ${reason} address (${host}), unreachable from outside` : undefined;
  }
  if (host === 'localhost') return 'names localhost';
  if (!host.includes('.')) return `names the single-label host ${host}, which only resolves inside its network`;
  const suffix = CLUSTER_LOCAL_SUFFIXES.find((s) => host.endsWith(s));
  if (suffix) return `names ${host}, a cluster-local name (*${suffix}) unreachable from outside`;
  return undefined;
}

/** The settings declared with publicUrlSetting: checked by loadConfig in production. */
const publicUrlSettings = z.registry<{ purpose: string }>();

/**
 * A URL setting given to the outside world. Any http(s) URL in development (the local fleet's loopback default);
 * in production (CAIRN_ENV=production) loadConfig refuses one publicUrlProblem objects to, so a service never
 * writes an unreachable address into a signed manifest or certificate.
 */
export function publicUrlSetting(defaultUrl: string, purpose: string) {
  const schema = z.string().url().default(defaultUrl);
  schema.register(publicUrlSettings, { purpose });
  return schema;
}

/** What production refuses among `shape`'s public URL settings, as `NAME: value problem (purpose)` lines. */
export function publicUrlProblems(shape: z.ZodRawShape, config: Record<string, unknown>): string[] {
  if (config.CAIRN_ENV !== 'production') return [];
  const problems: string[] = [];
  for (const [name, schema] of Object.entries(shape)) {
    const meta = publicUrlSettings.get(schema);
    const value = config[name];
    if (!meta || typeof value !== 'string') continue;
    const problem = publicUrlProblem(value);
    if (problem) problems.push(`${name}: ${value} ${problem}; production needs a public https URL (${meta.purpose})`);
  }
  return problems;
}
