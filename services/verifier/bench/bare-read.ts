// The verify baseline of `bench:fleet-cost` (which runs this as a child process and reads its JSON answer): a bare
// c2pa-node Reader under the verifier's read settings, plus one sharp decode, of each JPEG given, wall ms, after one
// untimed warm-up read; what a verify through the fleet is put against.
//
//   node --import tsx services/verifier/bench/bare-read.ts <trust anchors pem> <jpeg> [<jpeg> ...]
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { Reader } from '@contentauth/c2pa-node';
import { answer } from '../../../test/support/kernels.js';
import { readerSettingsJson } from '../src/adapters/c2pa/settings.js';

const [trustPath, ...paths] = process.argv.slice(2);
if (!trustPath || paths.length === 0) throw new Error('usage: bare-read.ts <trust anchors pem> <jpeg> [<jpeg> ...]');
const settings = readerSettingsJson([await readFile(trustPath, 'utf8')]);
const files = await Promise.all(paths.map((p) => readFile(p)));
const bare = async (bytes: Buffer) => {
  const t = performance.now();
  const reader = await Reader.fromAsset({ buffer: bytes, mimeType: 'image/jpeg' }, settings).catch(() => null); // no manifest
  reader?.json();
  await sharp(bytes).raw().toBuffer();
  return performance.now() - t;
};
await bare(files[0]!); // warm-up
const times: Array<[string, number]> = [];
for (const [i, bytes] of files.entries()) times.push([paths[i]!, await bare(bytes)]);
answer(times);
