/**
 * Rate-1/2 convolutional code, constraint length 7 (generators 171 and 133 octal, the common NASA/802.11
 * pair), terminated with 6 zero bits, decoded with soft-decision Viterbi. Against the repetition code alone
 * it buys several dB: bit errors that survive the vote are corrected from their neighbours in the trellis.
 */
const MEMORY = 6;
const STATES = 1 << MEMORY;
const G0 = 0o171;
const G1 = 0o133;

function parity(x: number): number {
  let v = x;
  v ^= v >>> 4;
  v ^= v >>> 2;
  v ^= v >>> 1;
  return v & 1;
}

/** The two code bits emitted when `bit` enters a register holding `state` (the previous 6 bits). */
function outputs(state: number, bit: number): [number, number] {
  const reg = ((state << 1) | bit) & 0x7f;
  return [parity(reg & G0), parity(reg & G1)];
}

/** Each state's two branches: the code bits a 0 and a 1 entering it emit (outputs, looked up by the decoders). */
const BRANCHES = Array.from({ length: STATES }, (_, s) => [outputs(s, 0), outputs(s, 1)] as const);

/** The trellis steps of a decode of `bits` message bits (tail included), refusing soft values of another length. */
function decodeSteps(soft: Float64Array, bits: number): number {
  const steps = bits + MEMORY;
  if (soft.length !== 2 * steps) throw new Error(`expected ${2 * steps} soft values, got ${soft.length}`);
  return steps;
}

/** Coded length for `bits` message bits (tail included). */
export function codedLength(bits: number): number {
  return 2 * (bits + MEMORY);
}

export function convEncode(bits: Uint8Array): Uint8Array {
  const out = new Uint8Array(codedLength(bits.length));
  let state = 0;
  for (let i = 0; i < bits.length + MEMORY; i++) {
    const bit = i < bits.length ? bits[i]! : 0;
    const [a, b] = outputs(state, bit);
    out[2 * i] = a;
    out[2 * i + 1] = b;
    state = ((state << 1) | bit) & (STATES - 1);
  }
  return out;
}

/**
 * Most likely message for soft code values: soft[i] > 0 votes for code bit 0, < 0 for 1, magnitude is trust.
 */
export function viterbiDecode(soft: Float64Array, bits: number): Uint8Array {
  const steps = decodeSteps(soft, bits);
  let metric = new Float64Array(STATES).fill(-Infinity);
  let next = new Float64Array(STATES);
  metric[0] = 0;
  // from[step * STATES + s]: the predecessor chosen for state s after `step`.
  const from = new Uint8Array(steps * STATES);
  for (let t = 0; t < steps; t++) {
    next.fill(-Infinity);
    const s0 = soft[2 * t]!;
    const s1 = soft[2 * t + 1]!;
    const maxBit = t < bits ? 1 : 0; // the tail is all zeros
    for (let s = 0; s < STATES; s++) {
      const m = metric[s]!;
      if (m === -Infinity) continue;
      for (let bit = 0; bit <= maxBit; bit++) {
        const [a, b] = BRANCHES[s]![bit]!;
        const candidate = m + (a ? -s0 : s0) + (b ? -s1 : s1);
        const ns = ((s << 1) | bit) & (STATES - 1);
        if (candidate > next[ns]!) {
          next[ns] = candidate;
          from[t * STATES + ns] = s;
        }
      }
    }
    [metric, next] = [next, metric];
  }
  const out = new Uint8Array(bits);
  let state = 0;
  for (let t = steps - 1; t >= 0; t--) {
    if (t < bits) out[t] = state & 1;
    state = from[t * STATES + state]!;
  }
  return out;
}

/**
 * The `list` most likely messages for soft code values, best first (parallel list Viterbi: every state keeps its
 * `list` best paths). With a check behind the code, the first path that passes it is the decode: when noise makes
 * a wrong path win by a little, the right one is usually among the next few, which is worth about a decibel of
 * signal. The first path is viterbiDecode's. Each path tried against the check is one more chance for noise to pass
 * it, so the caller counts `list` checks per decode in its false-positive bound.
 */
export function listViterbiDecode(soft: Float64Array, bits: number, list: number): Uint8Array[] {
  const steps = decodeSteps(soft, bits);
  const width = STATES * list;
  let metric = new Float64Array(width).fill(-Infinity);
  let next = new Float64Array(width);
  metric[0] = 0;
  // Per step and (state, rank): the predecessor's state and rank.
  const fromState = new Uint8Array(steps * width);
  const fromRank = new Uint8Array(steps * width);
  for (let t = 0; t < steps; t++) {
    next.fill(-Infinity);
    const s0 = soft[2 * t]!;
    const s1 = soft[2 * t + 1]!;
    const base = t * width;
    for (let ns = 0; ns < STATES; ns++) {
      const bit = ns & 1;
      if (bit && t >= bits) continue; // the tail is all zeros
      // The two states a bit can enter ns from (the register's oldest bit 0 or 1); their lists merged, best first.
      const pa = ns >> 1;
      const pb = pa | (STATES >> 1);
      const [a0, a1] = BRANCHES[pa]![bit]!;
      const [b0, b1] = BRANCHES[pb]![bit]!;
      const branchA = (a0 ? -s0 : s0) + (a1 ? -s1 : s1);
      const branchB = (b0 ? -s0 : s0) + (b1 ? -s1 : s1);
      const o = ns * list;
      for (let k = 0, i = 0, j = 0; k < list; k++) {
        const ma = i < list ? metric[pa * list + i]! + branchA : -Infinity;
        const mb = j < list ? metric[pb * list + j]! + branchB : -Infinity;
        if (ma === -Infinity && mb === -Infinity) break;
        if (ma >= mb) {
          next[o + k] = ma;
          fromState[base + o + k] = pa;
          fromRank[base + o + k] = i++;
        } else {
          next[o + k] = mb;
          fromState[base + o + k] = pb;
          fromRank[base + o + k] = j++;
        }
      }
    }
    [metric, next] = [next, metric];
  }
  const paths: Uint8Array[] = [];
  for (let r0 = 0; r0 < list && metric[r0]! > -Infinity; r0++) {
    const out = new Uint8Array(bits);
    let state = 0;
    let rank = r0;
    for (let t = steps - 1; t >= 0; t--) {
      if (t < bits) out[t] = state & 1;
      const at = t * width + state * list + rank;
      state = fromState[at]!;
      rank = fromRank[at]!;
    }
    paths.push(out);
  }
  return paths;
}
