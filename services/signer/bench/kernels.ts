// The signer's layer of a sign, alone, for `bench:fleet-cost` (which runs this as a child process and reads its JSON
// answer): the C2PA sign of the marked file (with the watermark kernels' thumbnail for an image) by a callback
// signer under a test credential, timed as CPU of this process and its reaped children. Writes `<out>/signed`, and
// `<out>/ca.pem`, the credential's CA, for the bare read of bench:fleet-cost's verify baseline.
//
//   node --import tsx services/signer/bench/kernels.ts <mime type> <file> <out dir> <rounds> [thumbnail jpeg]
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { answer, kernelMs } from '../../../test/support/kernels.js';
import { buildAndSign, type BuildAndSignInput } from '../src/adapters/c2pa/index.js';
import { callbackSignerFor, makeTestCredential } from '../test/c2pa-fixtures.js';

const [mimeType, path, out, roundsArg, thumbnailPath] = process.argv.slice(2);
if (!mimeType || !path || !out || !roundsArg)
  throw new Error('usage: kernels.ts <mime type> <file> <out dir> <rounds> [thumbnail jpeg]');
const credential = await makeTestCredential();
const input: BuildAndSignInput = {
  asset: await readFile(path),
  mimeType: mimeType as BuildAndSignInput['mimeType'],
  signer: callbackSignerFor(credential),
  claimGenerator: { name: 'cairn', version: '0.1.0' },
  title: 'bench',
  digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
  metadata: { generator: 'bench' },
  ...(thumbnailPath ? { thumbnail: { bytes: await readFile(thumbnailPath), mimeType: 'image/jpeg' } } : {}),
};
const sign = await kernelMs(Number(roundsArg), () => buildAndSign(input));
await writeFile(join(out, 'signed'), sign.value.signed);
await writeFile(join(out, 'ca.pem'), credential.caCertPem);
answer([['C2PA sign', sign.ms]]);
