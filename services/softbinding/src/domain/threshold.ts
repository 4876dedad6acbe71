/**
 * The lookup radius (Hamming distance out of 256), chosen from the measured distributions (README): transformed
 * copies of a signed photo land at ≤ 16 from its nearest indexed variant (one texture image at 36), different
 * photos at ≥ 102. PDQ's customary 31 sits between them, and with 16 chunks of 16 bits it keeps the
 * multi-index search at one flipped bit per chunk (16 × 17 exact lookups).
 */
export const LOOKUP_RADIUS = 31;
