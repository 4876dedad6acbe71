// Entry point of the signer's C2PA child process. c2pa-rs parses the upload's container (and any manifest or
// ingredients already in it) natively while it embeds; a panic, abort or runaway there kills this process, not
// the signer. The signing key never enters this process: the CallbackSigner here sends c2pa-rs's to-be-signed
// bytes to the parent, which signs them with its key backend (software or PKCS#11) and answers the signature.
// Built as its own entry (dist/sign-child.js next to dist/main.js); run from source with `--import tsx`.
import { Builder, CallbackSigner } from '@contentauth/c2pa-node';
import { serveTasks } from '@cairn/isolate/child';
import { asBuffer } from '@cairn/isolate';
import { buildAndSign, SIGN_SETTINGS } from './sign.js';
import { isSignTask, type SignTaskResult } from './isolated-protocol.js';

serveTasks(
  async (payload, context): Promise<SignTaskResult> => {
    if (!isSignTask(payload)) throw new TypeError('not a sign task');
    const signer = CallbackSigner.newSigner(
      {
        alg: 'es256',
        certs: payload.signer.chainPem.map((pem) => Buffer.from(pem, 'utf8')),
        reserveSize: payload.signer.reserveSize,
        ...(payload.signer.tsaUrl ? { tsaUrl: payload.signer.tsaUrl } : {}),
        directCoseHandling: false,
      },
      async (data: Buffer) => asBuffer((await context.call({ type: 'sign', data })) as Uint8Array),
    );
    const { input } = payload;
    const result = await buildAndSign({
      ...input,
      asset: asBuffer(input.asset),
      signer,
      ...(input.thumbnail
        ? { thumbnail: { bytes: asBuffer(input.thumbnail.bytes), mimeType: input.thumbnail.mimeType } }
        : {}),
    });
    return { signed: result.signed, manifestStore: result.manifestStore, manifestLabel: result.manifestLabel };
  },
  // Load the native addon now rather than on the first sign, so the first task's budget is spent on the task.
  async () => {
    Builder.withJson({ claim_generator_info: [{ name: 'cairn-warmup' }] }, SIGN_SETTINGS);
  },
);
