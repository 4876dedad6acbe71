/**
 * Band-limited resampling of the mark (not of the host): the mark is computed at 16 kHz and added to the
 * upload at its own rate, so it must arrive there without images or droop in its band. A Lanczos-windowed
 * sinc, 16 zero crossings a side, read from a table (linear between entries) so a minute of 48 kHz stereo
 * costs tens of milliseconds; going down (8 kHz files) the cut-off follows the lower Nyquist.
 */
export function resampleSignal(
  input: Float32Array,
  fromRate: number,
  toRate: number,
  length = Math.round((input.length * toRate) / fromRate),
): Float32Array {
  const out = new Float32Array(length);
  if (fromRate === toRate) {
    out.set(input.subarray(0, length));
    return out;
  }
  const ratio = fromRate / toRate;
  // Cut-off in input cycles per sample: the input's Nyquist, or the output's when that is lower.
  const cutoff = 0.5 * Math.min(1, toRate / fromRate);
  const half = Math.ceil(16 / (2 * cutoff));
  const table = kernelTable(cutoff, half);
  for (let n = 0; n < length; n++) {
    const x = n * ratio;
    const centre = Math.floor(x);
    let sum = 0;
    const first = Math.max(0, centre - half + 1);
    const last = Math.min(input.length - 1, centre + half);
    for (let k = first; k <= last; k++) {
      const position = (x - k + half) * TABLE_RESOLUTION;
      const i = Math.floor(position);
      const frac = position - i;
      sum += input[k]! * (table[i]! + frac * (table[i + 1]! - table[i]!));
    }
    out[n] = sum;
  }
  return out;
}

const TABLE_RESOLUTION = 512;

function kernelTable(cutoff: number, half: number): Float64Array {
  const table = new Float64Array(2 * half * TABLE_RESOLUTION + 2);
  for (let i = 0; i < table.length; i++) {
    const t = i / TABLE_RESOLUTION - half;
    const u = 2 * cutoff * t;
    const sinc = u === 0 ? 1 : Math.sin(Math.PI * u) / (Math.PI * u);
    const w = t / half;
    const window = Math.abs(w) >= 1 ? 0 : w === 0 ? 1 : Math.sin(Math.PI * w) / (Math.PI * w);
    table[i] = 2 * cutoff * sinc * window;
  }
  return table;
}
