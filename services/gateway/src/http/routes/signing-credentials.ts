import { Router, type Request } from 'express';
import { z } from 'zod';
import { CairnError } from '@cairn/errors';
import { isoTimestamp, type signerV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { requireScope } from '../auth.js';
import { jsonBody } from '../validate.js';
import { json, jsonRequest, needsKey, noContent, operationsOf } from '../openapi/describe.js';

const PROOF_BYTES =
  '"cairn-byok-registration\\n<your tenant id>\\n<lowercase hex SHA-256 of the leaf certificate DER>"';
const PROOF_REQUIRED = `proof_of_possession is required: base64 of the ES256 signature, by the leaf certificate's key, of the UTF-8 bytes ${PROOF_BYTES}.`;

export const registerBody = z
  .object({
    certificate_chain_pem: z
      .string()
      .min(1)
      .max(64 * 1024),
    endpoint_url: z.string().trim().min(1).max(2048),
    description: z.string().trim().max(200).optional(),
    proof_of_possession: z
      .string({ error: PROOF_REQUIRED })
      .trim()
      .min(1, { error: PROOF_REQUIRED })
      .max(512)
      .describe(
        `Proof that you hold the leaf key: base64 (64 bytes raw r‖s, or DER) of the ES256 signature, made with the leaf certificate's key, of the UTF-8 bytes ${PROOF_BYTES} (no trailing newline). Bound to your tenant: a proof made for another tenant does not register.`,
      ),
  })
  .strict();

function present(credential: signerV1.SigningCredential | undefined, hmacSecret?: string): Record<string, unknown> {
  if (!credential) return {};
  return {
    credential_id: credential.credentialId,
    ...(credential.description ? { description: credential.description } : {}),
    subject: credential.subject,
    not_after: isoTimestamp(credential.notAfter),
    endpoint_url: credential.endpointUrl,
    ...(hmacSecret ? { hmac_secret: hmacSecret } : {}),
    created_at: isoTimestamp(credential.createdAt),
  };
}

/** Only Enterprise tenants sign with their own keys; only their admin keys manage the credentials. */
function enterpriseTenant(req: Request): string {
  const tenant = req.auth!.tenant;
  if (tenant.plan !== 'enterprise')
    throw new CairnError('cairn.auth.forbidden', 'Signing with your own key (BYOK) is an Enterprise feature.');
  return tenant.tenantId;
}

export const operations = operationsOf('Signing', needsKey('admin'), {
  registerSigningCredential: {
    route: 'post /v1/signing-credentials',
    summary: 'Register your own signing key (Enterprise, BYOK), proving you hold it',
    description:
      "The chain (PEM, leaf first, leaf EC P-256), the endpoint that holds the key, and `proof_of_possession`: base64 of the ES256 signature, made with the leaf key, of the UTF-8 bytes `cairn-byok-registration\\n<tenant_id>\\n<lowercase hex SHA-256 of the leaf certificate DER>`. A missing or failing proof, a chain whose subject carries Cairn's own certificate names (O of Cairn's certificates, CN `Cairn Root CA`, `Cairn Intermediate CA`, `Cairn Signing …`, `Cairn OCSP Responder …`) or that Cairn's CA issued, and an endpoint at an internal address are 400 `cairn.validation.invalid_body` naming the field. Every signature the endpoint later answers is verified against the leaf before use; one that does not verify fails the sign with 503 `cairn.signer.unavailable` and nothing recorded or billed.",
    body: jsonRequest(registerBody, {
      certificate_chain_pem: '-----BEGIN CERTIFICATE-----\n…',
      endpoint_url: 'https://keys.example.com/sign',
      proof_of_possession: 'MEUCIQ…',
    }),
    answers: [
      json(201, 'The credential; its HMAC secret is shown once', {
        credential_id: 'sc_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        subject: 'CN=Example Studio',
        hmac_secret: '…',
      }),
    ],
    errors: ['cairn.auth.forbidden'],
  },
  listSigningCredentials: {
    route: 'get /v1/signing-credentials',
    summary: 'List your signing credentials',
    auth: needsKey('read'),
    answers: [json(200, 'The credentials', { credentials: [] })],
    errors: ['cairn.auth.forbidden'],
  },
  deleteSigningCredential: {
    route: 'delete /v1/signing-credentials/:credential_id',
    summary: 'Remove a signing credential',
    answers: [noContent],
    errors: ['cairn.auth.forbidden', 'cairn.not_found'],
  },
});

/**
 * `/v1/signing-credentials`: bring your own key. A credential is the tenant's certificate chain and the https
 * endpoint that holds its private key; a sign names it with the form field `signing_credential`. The HMAC secret
 * that authenticates Cairn's signing requests is shown once, at registration. Registration proves possession of the
 * leaf key (`proof_of_possession`, checked by the signer, which also refuses chains passing for Cairn's own), and
 * every signature the endpoint answers is verified against the leaf before it is used.
 */
export function signingCredentialRoutes(deps: { signer: ClientOf<typeof signerV1.SignerService> }): Router {
  const router = Router();

  router.post('/v1/signing-credentials', requireScope('admin'), async (req, res) => {
    const tenantId = enterpriseTenant(req);
    const body = jsonBody(req, registerBody);
    const registered = await deps.signer.registerCredential(
      {
        tenantId,
        certificateChainPem: body.certificate_chain_pem,
        endpointUrl: body.endpoint_url,
        description: body.description ?? '',
        proofOfPossession: body.proof_of_possession,
        actorKeyId: req.auth!.keyId,
      },
      { deadlineMs: 15_000 },
    );
    res.status(201).json(present(registered.credential, registered.hmacSecret));
  });

  router.get('/v1/signing-credentials', requireScope('read'), async (req, res) => {
    const tenantId = enterpriseTenant(req);
    const { credentials } = await deps.signer.listCredentials({ tenantId });
    res.json({ data: credentials.map((c) => present(c)) });
  });

  router.delete('/v1/signing-credentials/:credential_id', requireScope('admin'), async (req, res) => {
    const tenantId = enterpriseTenant(req);
    await deps.signer.deleteCredential({
      tenantId,
      credentialId: String(req.params.credential_id),
      actorKeyId: req.auth!.keyId,
    });
    res.status(204).end();
  });

  return router;
}
