/**
 * Mean over the (2·radius + 1)² neighbourhood clipped to the plane (integral image), written into `out` (w·h
 * samples). The sums are Float64 whatever the planes are, so a Float32 `out` holds the Float64 mean rounded once:
 * the detector's whitening (Float64) and the content check's registration (Float32) share it without either's
 * numbers changing.
 */
export function boxMean<T extends Float32Array | Float64Array>(
  plane: Float32Array | Float64Array,
  w: number,
  h: number,
  radius: number,
  out: T,
): T {
  const integral = new Float64Array((w + 1) * (h + 1));
  for (let y = 0; y < h; y++) {
    let row = 0;
    for (let x = 0; x < w; x++) {
      row += plane[y * w + x]!;
      integral[(y + 1) * (w + 1) + x + 1] = integral[y * (w + 1) + x + 1]! + row;
    }
  }
  for (let y = 0; y < h; y++) {
    const y0 = Math.max(0, y - radius);
    const y1 = Math.min(h, y + radius + 1);
    for (let x = 0; x < w; x++) {
      const x0 = Math.max(0, x - radius);
      const x1 = Math.min(w, x + radius + 1);
      const sum =
        integral[y1 * (w + 1) + x1]! -
        integral[y0 * (w + 1) + x1]! -
        integral[y1 * (w + 1) + x0]! +
        integral[y0 * (w + 1) + x0]!;
      out[y * w + x] = sum / ((y1 - y0) * (x1 - x0));
    }
  }
  return out;
}
