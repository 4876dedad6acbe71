import { randomBytes, X509Certificate } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import type { Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { refusedReason, type DestinationPolicy } from '@cairn/outbound';
import type { Sealer } from '@cairn/sealing';
import {
  checkCredentialChain,
  impersonatesCairn,
  registrationProofMessage,
  type CairnIdentity,
} from '../domain/credential-chain.js';
import { es256Raw, verifiesEs256 } from '../domain/es256.js';
import type { CertificateAuthority } from './pki/certificate-authority.js';
import { x509 } from '../domain/pki/x509.js';
import type { ActiveSigningKey, CredentialRecords, CredentialRow, RemoteKeyBackend } from './ports.js';
import { credentialChanged, credentialSettings, type AdminAuditOutbox } from './credential-audit.js';
export type { CredentialRow };

export interface CredentialDeps {
  store: CredentialRecords;
  /** Signs through the tenant's BYOK endpoint (adapters/remote-signer.ts). */
  remoteKey: RemoteKeyBackend;
  sealer: Sealer;
  policy: DestinationPolicy;
  timeoutMs: number;
  /** Cairn's own certificates and organisation names, which a tenant's chain may not pass for. */
  cairnIdentity: () => Promise<CairnIdentity>;
  /** Every register and delete leaves an admin.changed audit event, written in the same transaction. */
  outbox: AdminAuditOutbox;
}

export interface RegisteredCredential {
  row: CredentialRow;
  /** Shown once, at registration: the endpoint checks Cairn's requests with it. */
  hmacSecret: string;
}

const invalid = (message: string, path: string) =>
  new CairnError('cairn.validation.invalid_body', message, { errors: [{ path, message }] });

/** The endpoint a tenant names: http(s), no credentials in it, and (after DNS) no address the policy refuses. */
async function checkEndpoint(raw: string, policy: DestinationPolicy): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('endpoint_url must be an absolute URL.', 'endpoint_url');
  }
  if (raw.length > 2048) throw invalid('endpoint_url must be at most 2048 characters.', 'endpoint_url');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && !policy.httpsOnly))
    throw invalid('endpoint_url must use https.', 'endpoint_url');
  if (url.username || url.password) throw invalid('endpoint_url must not carry credentials.', 'endpoint_url');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = await lookup(host, { all: true, verbatim: true }).catch(() => []);
  if (addresses.length === 0) throw invalid(`endpoint_url host "${host}" does not resolve.`, 'endpoint_url');
  for (const { address } of addresses) {
    const reason = refusedReason(address, policy);
    if (reason)
      throw invalid(`endpoint_url resolves to a ${reason} address, which Cairn may not call.`, 'endpoint_url');
  }
  return url.toString();
}

/** Cairn's identity from its own hierarchy: every certificate it has issued, and their organisations. */
export async function cairnIdentity(
  authority: Pick<CertificateAuthority, 'listCertificates'>,
  configuredOrg: string,
): Promise<CairnIdentity> {
  const certificatesPem = (await authority.listCertificates()).map((c) => c.pem);
  const organizations = new Set([configuredOrg]);
  for (const pem of certificatesPem)
    for (const o of new x509.X509Certificate(pem).subjectName.getField('O')) organizations.add(o);
  return { organizations: [...organizations], certificatesPem };
}

/**
 * The registering tenant holds the leaf's key: `proof` is its ES256 signature (base64, raw r‖s or DER) over
 * registrationProofMessage. Certificates are public; without this anyone could register another organisation's.
 */
function checkProofOfPossession(tenantId: string, leaf: X509Certificate, proof: string): void {
  const message = registrationProofMessage(tenantId, leaf);
  const howTo = `Sign with the leaf certificate's key (ES256: ECDSA P-256 over SHA-256) the UTF-8 bytes ${JSON.stringify(message)} (no trailing newline) and send the signature, base64 (64 bytes raw r‖s, or DER), as proof_of_possession.`;
  if (!proof.trim()) throw invalid(`proof_of_possession is required. ${howTo}`, 'proof_of_possession');
  const raw = /^[A-Za-z0-9+/_-]+={0,2}$/.test(proof.trim()) ? es256Raw(Buffer.from(proof.trim(), 'base64')) : undefined;
  if (!raw || !verifiesEs256(leaf.publicKey, Buffer.from(message, 'utf8'), raw))
    throw invalid(
      `proof_of_possession does not verify under the leaf certificate's key for this tenant. ${howTo}`,
      'proof_of_possession',
    );
}

/** Bring-your-own-key credentials: registered by an Enterprise tenant, used when a sign names one. */
export class Credentials {
  constructor(private readonly deps: CredentialDeps) {}

  async register(
    tenantId: string,
    input: { chainPem: string; endpointUrl: string; description: string; proofOfPossession: string },
    actorKeyId: string | null = null,
  ): Promise<RegisteredCredential> {
    const chain = checkCredentialChain(input.chainPem);
    if (typeof chain === 'string') throw invalid(`${chain}.`, 'certificate_chain_pem');
    const impersonation = impersonatesCairn(chain.chainPem, await this.deps.cairnIdentity());
    if (impersonation) throw invalid(`${impersonation}.`, 'certificate_chain_pem');
    checkProofOfPossession(tenantId, chain.leaf, input.proofOfPossession);
    const endpointUrl = await checkEndpoint(input.endpointUrl, this.deps.policy);
    const credentialId = newId('credential');
    const hmacSecret = `bks_${randomBytes(32).toString('base64url')}`;
    const audit = (tx: Tx, inserted: CredentialRow) =>
      this.deps.outbox.enqueue(
        tx,
        credentialChanged('signing_credential.registered', inserted, actorKeyId, {
          before: null,
          after: credentialSettings(inserted, hmacSecret),
        }),
      );
    const row = await this.deps.store.insert(audit, {
      credentialId,
      tenantId,
      description: input.description,
      chainPem: chain.chainPem,
      subject: chain.subject,
      notAfter: chain.notAfter,
      endpointUrl,
      hmacSecretSealed: this.deps.sealer.seal(hmacSecret, `${tenantId}/${credentialId}`),
    });
    void this.deps.outbox.flush();
    return { row, hmacSecret };
  }

  list(tenantId: string): Promise<CredentialRow[]> {
    return this.deps.store.list(tenantId);
  }

  async delete(tenantId: string, credentialId: string, actorKeyId: string | null = null): Promise<boolean> {
    const deleted = await this.deps.store.delete(tenantId, credentialId, (tx, row) =>
      this.deps.outbox.enqueue(
        tx,
        credentialChanged('signing_credential.deleted', row, actorKeyId, {
          before: credentialSettings(row),
          after: null,
        }),
      ),
    );
    if (deleted) void this.deps.outbox.flush();
    return deleted;
  }

  /** The signing key of a sign that names this credential: the tenant's chain, its endpoint as the backend. */
  async activeKey(tenantId: string, credentialId: string): Promise<ActiveSigningKey> {
    const row = await this.deps.store.get(tenantId, credentialId);
    if (!row)
      throw new CairnError(
        'cairn.sign.invalid_recipe',
        `Signing credential ${credentialId} not found for this tenant.`,
      );
    if (row.notAfter.getTime() < Date.now())
      throw new CairnError(
        'cairn.sign.invalid_recipe',
        `Signing credential ${credentialId} expired on ${row.notAfter.toISOString()}; register a new one.`,
      );
    const leaf = new X509Certificate(row.chainPem[0]!);
    return {
      serialHex: leaf.serialNumber.toLowerCase(),
      certificatePem: row.chainPem[0]!,
      chainPem: row.chainPem,
      notAfter: row.notAfter,
      credentialId,
      backend: this.deps.remoteKey({
        url: row.endpointUrl,
        credentialId,
        hmacSecret: this.deps.sealer.open(row.hmacSecretSealed, `${tenantId}/${credentialId}`),
        leafPublicKey: leaf.publicKey,
        timeoutMs: this.deps.timeoutMs,
        policy: this.deps.policy,
      }),
    };
  }
}
