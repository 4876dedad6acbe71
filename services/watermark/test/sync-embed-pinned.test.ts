import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { createKeyedImageWatermark } from '../src/domain/image/cairn-dct-keyed-v1.js';
import { gridSize } from '../src/domain/image/cairn-sync-v2.js';
import { lumaGrid } from '../src/domain/image/luma.js';
import { psnr } from '../src/domain/image/psnr.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { ImageAlgorithms } from '../src/domain/image-tasks.js';
import type { WatermarkKey } from '../src/domain/keys.js';
import { keyedPayloadFor } from '../src/domain/payload.js';
import { loadPhoto, type PhotoOptions } from './support/images.js';
import { embedTask } from './support/tasks.js';

// The pixels cairn-sync-v2 writes, pinned: a mark already issued is only read back if the embedder keeps writing
// exactly it, and a speed-up of the embed path must leave every marked sample, the content description
// the registry keeps and the PSNR the signer reports as they were. The digests were taken from the embedder as it
// was before that work. Each case pins its input too, so a changed decoder or resizer (a sharp upgrade) shows as
// such rather than as a changed mark.
const keyOf = (label: string): WatermarkKey => ({
  kid: label,
  secret: Uint8Array.from(createHash('sha256').update(label).digest()),
});
const sha256 = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex').slice(0, 32);

interface Case {
  readonly name: string;
  readonly image: () => Promise<RawImage>;
  readonly key: string;
  readonly input: string;
  readonly marked: string;
  readonly content: string;
  readonly psnrDb: number;
  /** The luma grids of cairn-sync-v2's embedding and detection, whose code the other marks and the video share. */
  readonly luma: string;
  /** cairn-dct-keyed-v1's marked samples under the same key (it shares the luma resampling). */
  readonly dctKeyed: string;
}

const photo = (file: string, options: PhotoOptions) => () => loadPhoto(file, options);

const CASES: ReadonlyArray<Case> = [
  {
    name: 'astronaut 1152×864',
    image: photo('astronaut.png', { size: [1152, 864] }),
    key: 'pinned-k1',
    input: '6b5f66a5d644e1dcbfe4c29df60075fd',
    marked: '910f1e61529bbaed4e1e322764096aad',
    content: '28f35375866c50cb10e29dc5877183f7',
    psnrDb: 42.89183231144045,
    luma: '605539d9942352a9ad6bc7d2bb221abd',
    dctKeyed: '97b4169439b286dad5934b7e48956894',
  },
  {
    name: 'camera 1152×864',
    image: photo('camera.png', { size: [1152, 864] }),
    key: 'pinned-k1',
    input: 'ba70fc5479c71d4f1f5d57f9b4b04487',
    marked: '8ff873e3a5dc2c6b2de786250bd9e18c',
    content: 'b867cd064170939018624248f4324666',
    psnrDb: 42.5419480536896,
    luma: 'c8ba86802d20fa053ef7c7c9e3fc1feb',
    dctKeyed: 'e7b029fa70564da9ee373b7ceb45a35e',
  },
  {
    name: 'chelsea 1152×864',
    image: photo('chelsea.png', { size: [1152, 864] }),
    key: 'pinned-k1',
    input: '27b1a2be1062b8c57916fbe903670116',
    marked: 'f9ab78260d8e70f50494925d88b3a3be',
    content: 'f23b0c93403d37165ed5779ffec58e73',
    psnrDb: 42.44274158578712,
    luma: '90ff1b46bde63d099195a4477861680d',
    dctKeyed: 'c7adc3d78867e4dc4cfbd6b70c50f3ae',
  },
  {
    name: 'coffee 1152×864',
    image: photo('coffee.png', { size: [1152, 864] }),
    key: 'pinned-k1',
    input: '8d54f77c0b0ac19b21e2bad2e9268af7',
    marked: '5fa8d336c37f4452ba5001748ed79cbb',
    content: 'b94ffda214236f1013922cab015d9b2d',
    psnrDb: 42.44409333224741,
    luma: '78364ff1ce83d3d8c05256ec1e797bf6',
    dctKeyed: 'd7eb6195d8591f67a96c3740c33974d6',
  },
  {
    name: 'chelsea 1152×864',
    image: photo('chelsea.png', { size: [1152, 864] }),
    key: 'pinned-k2',
    input: '27b1a2be1062b8c57916fbe903670116',
    marked: '670493b8404f057e8c5d02cd88b8f74e',
    content: 'f23b0c93403d37165ed5779ffec58e73',
    psnrDb: 42.53965743714919,
    luma: '90ff1b46bde63d099195a4477861680d',
    dctKeyed: '6fb55445228f3f9d2ed7d8fe1c9bcbae',
  },
  {
    name: 'coffee 2048×1536',
    image: photo('coffee.png', { size: [2048, 1536] }),
    key: 'pinned-k2',
    input: 'fc3558d7d3e57a684054bf714265528f',
    marked: 'c1f5a4b6b1bdd5eb21735858e88a6a28',
    content: '339f633b9d7b64d73b90c841e8db6ce9',
    psnrDb: 42.5491911979902,
    luma: '45841252476b9bc2ca8726e42407eef8',
    dctKeyed: 'e2cbc79acfafc5b816153bd4b388208e',
  },
  {
    name: 'coffee 600×400',
    image: photo('coffee.png', {}),
    key: 'pinned-k3',
    input: '0ce2b51640b9c95f19617f03eabf40c3',
    marked: '45b4a6f2be838f9d122b414c2637a1b7',
    content: '9a3f77e8ceb2eaf3497c05ba8d79e75b',
    psnrDb: 42.497497686300235,
    luma: 'd9a27f997e5e6d8dd7f5ca1e3a5cb5b2',
    dctKeyed: '511dd7ee4dd526a57604a6e0354d4edb',
  },
  {
    name: 'chelsea 300×256',
    image: photo('chelsea.png', { size: [300, 256] }),
    key: 'pinned-k3',
    input: '87d69c6f6d8ba3ea6ecaceeb85f56c83',
    marked: 'e474d9260946015d64cf7262a5a94626',
    content: '76f35d4a058f1f8545df3b63e66160bb',
    psnrDb: 42.325261034919734,
    luma: '0de43d285a9c6af59b3b67d640962382',
    dctKeyed: 'a619dc43e67e9e4f0d1a1148c5bccbef',
  },
  {
    name: 'camera gray 512×512',
    image: photo('camera.png', { gray: true }),
    key: 'pinned-k3',
    input: '5cb24482a53416f99052258be2b1ee38',
    marked: 'c252aba6a12444316f5a1618a236e592',
    content: '8596190ee1f02e279003f9d59de263e4',
    psnrDb: 42.852913474372215,
    luma: '085168b5b9e065c2c20624f708b30b33',
    dctKeyed: 'fc5e17b6f18f44d23725069d3ba4c3a5',
  },
  {
    name: 'astronaut RGBA 777×555',
    image: photo('astronaut.png', { size: [777, 555], alpha: true }),
    key: 'pinned-k1',
    input: '6e345adc9ed3ee10888b26db582b4ca2',
    marked: '0ff29e7584b592dd324053d963591836',
    content: '280f0ea15e5d7cb11ebe420dea4dc6c6',
    psnrDb: 42.91149317873008,
    luma: '0bbce4994ba4669125010bfb0131f91c',
    dctKeyed: '438de97d11ae86fbc188ad359b1f43f2',
  },
];

describe('cairn-sync-v2 embed output', () => {
  const algorithms = new ImageAlgorithms();
  it.each(CASES)('is unchanged for $name under $key', async (c) => {
    const image = await c.image();
    const key = keyOf(c.key);
    const payload = keyedPayloadFor(key.secret, `w_pinned_${c.name}`);
    const outcome = embedTask(algorithms, { image, payload, key, algorithm: 'cairn-sync-v2' });
    expect({
      input: sha256(image.pixels),
      marked: sha256(outcome.image.pixels),
      content: sha256(outcome.content!),
      psnrDb: outcome.psnrDb,
      luma: sha256(
        Buffer.concat(
          [gridSize(image.width, image.height), gridSize(image.width, image.height, 1.25)].map(([w, h]) => {
            const grid = lumaGrid(image, w, h);
            return new Uint8Array(grid.buffer, grid.byteOffset, grid.byteLength);
          }),
        ),
      ),
      dctKeyed: sha256(createKeyedImageWatermark(key.secret).embed(image, payload).pixels),
    }).toEqual({
      input: c.input,
      marked: c.marked,
      content: c.content,
      psnrDb: c.psnrDb,
      luma: c.luma,
      dctKeyed: c.dctKeyed,
    });
    expect(outcome.image).toMatchObject({ width: image.width, height: image.height, channels: image.channels });
    // A worker marks the pixels it was handed in place: the same mark and PSNR.
    const owned = embedTask(
      algorithms,
      { image: { ...image, pixels: image.pixels.slice() }, payload, key, algorithm: 'cairn-sync-v2' },
      { pixelsOwned: true },
    );
    expect([sha256(owned.image.pixels), owned.psnrDb]).toEqual([c.marked, c.psnrDb]);
    // cairn-dct-keyed-v1 the same way: its mark, and the PSNR a comparison with the original gives.
    const dct = embedTask(
      algorithms,
      { image: { ...image, pixels: image.pixels.slice() }, payload, key, algorithm: 'cairn-dct-keyed-v1' },
      { pixelsOwned: true },
    );
    expect(sha256(dct.image.pixels)).toBe(c.dctKeyed);
    expect(dct.psnrDb).toBe(psnr(image, dct.image));
  });
});
