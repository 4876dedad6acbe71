// The low-texture class of the image bench (flat, smooth, grayscale and upscaled content): each host marked as a
// sign marks it (cairn-sync-v2, read back from its own encoded file, escalating through the strength levels the
// watermark service uses when it does not read), then every attack of the issue-13 table on what reads back.
// Lines: read-back 100 % where the class can carry a mark, every attack ≥ 95 % over the class.
import { SyncTileWatermark } from '../../src/domain/image/cairn-sync-v2.js';
import { psnr } from '../../src/domain/image/psnr.js';
import { keyedPayloadFor } from '../../src/domain/payload.js';
import { startLevel } from '../../src/domain/image/readback.js';
import { ISSUE_ATTACKS } from './attacks.js';
import { lowTextureClass, ssim } from './images.js';
import { signImage } from './sign.js';

const hex = (p: Uint8Array) => Buffer.from(p).toString('hex');

interface HostRow {
  label: string;
  marks: number;
  readAtLevel0: number;
  readBack: number;
  levels: number[];
  psnr: number[];
  ssim: number[];
}

/** Runs the class under `keys` (the bench's), on the hosts of `seeds` (judging set: seeds never tuned on). */
export async function lowTextureBench(
  keys: ReadonlyArray<Uint8Array>,
  seeds: ReadonlyArray<number> = [30, 31],
  /** Every host from this level instead of the one EmbedImage chooses (startLevel): to compare the levels. */
  fixedStart = process.env.LOW_TEXTURE_START_LEVEL === undefined
    ? undefined
    : Number(process.env.LOW_TEXTURE_START_LEVEL),
) {
  const rows = new Map<string, HostRow>();
  const attacks = new Map<string, { hit: number; n: number; missed: string[] }>();
  for (const seed of seeds) {
    const hosts = await lowTextureClass(seed);
    for (const key of keys) {
      const wm = new SyncTileWatermark(key);
      for (const host of hosts) {
        const payload = keyedPayloadFor(key, `w_class_${seed}_${hex(key).slice(0, 8)}_${host.label}`);
        const row = rows.get(host.label) ?? {
          label: host.label,
          marks: 0,
          readAtLevel0: 0,
          readBack: 0,
          levels: [],
          psnr: [],
          ssim: [],
        };
        rows.set(host.label, row);
        row.marks++;
        // As EmbedImage does it: embed, encode in the upload's format, decode as a verify does, read, escalate.
        const first = fixedStart ?? startLevel(host.image);
        const signed = await signImage(wm, host.image, host.format, payload, first);
        const received = signed?.image ?? null;
        if (signed) {
          if (signed.level === first) row.readAtLevel0++;
          row.readBack++;
          row.levels.push(signed.level);
          row.psnr.push(psnr(host.image, signed.image));
          row.ssim.push(ssim(host.image, signed.image));
        }
        if (!received) continue; // signed without a mark (watermark_not_embedded): no attack line applies
        for (const [name, attack] of ISSUE_ATTACKS) {
          const read = wm.detect(await attack(received));
          const cell = attacks.get(name) ?? { hit: 0, n: 0, missed: [] };
          cell.n++;
          if (read && hex(read.payload) === hex(payload)) cell.hit++;
          else cell.missed.push(host.label);
          attacks.set(name, cell);
        }
        process.stderr.write(',');
      }
    }
  }
  process.stderr.write('\n');
  return { rows: [...rows.values()], attacks };
}

export function printLowTexture(result: Awaited<ReturnType<typeof lowTextureBench>>, seeds = [30, 31]): void {
  const min = (xs: number[]) => (xs.length ? Math.min(...xs) : NaN);
  console.log(
    `\nlow-texture class (flat, smooth, grayscale, upscaled; 1152×864, seeds ${seeds.join(', ')}): read back from the encoded file, escalating as EmbedImage does`,
  );
  console.log('| host | read back (first level) | read back | levels used | PSNR dB min (as received) | SSIM min |');
  console.log('|---|---|---|---|---|---|');
  for (const r of result.rows)
    console.log(
      `| ${r.label} | ${r.readAtLevel0}/${r.marks} | ${r.readBack}/${r.marks} | ${[...new Set(r.levels)].sort().join(', ') || '-'} | ${min(r.psnr).toFixed(1)} | ${min(r.ssim).toFixed(3)} |`,
    );
  console.log('\n| attack (low-texture class, marks that read back) | cairn-sync-v2 TPR | ≥ 95 %? | missed on |');
  console.log('|---|---|---|---|');
  for (const [name, c] of result.attacks)
    console.log(
      `| ${name} | ${((100 * c.hit) / c.n).toFixed(0)}% (${c.hit}/${c.n}) | ${c.hit / c.n >= 0.95 ? 'pass' : 'FAIL'} | ${[...new Set(c.missed)].join(', ')} |`,
    );
  const marks = result.rows.reduce((n, r) => n + r.marks, 0);
  const read = result.rows.reduce((n, r) => n + r.readBack, 0);
  console.log(`ratio low-texture.readback ${(read / Math.max(1, marks)).toFixed(3)}`);
  for (const [name, c] of result.attacks)
    console.log(`ratio low-texture.tpr.${name.replace(/[^A-Za-z0-9.%×°+−-]+/g, '_')} ${(c.hit / c.n).toFixed(3)}`);
}
