/**
 * Multi-index hashing in memory over 256-bit hashes: 16 tables, one per 16-bit chunk. By pigeonhole a hash within
 * distance r of the query has a chunk within floor(r/16) of the query's chunk, so the candidates are the buckets of
 * the query chunks' neighbours, and each is confirmed by its full distance (up to 8 popcounts).
 * Each table has two parts: the slots it held at its last `compact`, sorted by chunk value (a bucket is one
 * contiguous run of slot numbers), and the slots added since, chained through the slots (head[value] → slot →
 * next[slot] → …, -1 ends a chain). A chain costs a cache miss per candidate for its link besides the one for the
 * hash; a sorted run does not (about a quarter of the in-memory search at a million slots).
 * About 110 bytes a slot (hash 32, id 8, tenant 4, alg 1, 16 bucket entries 64): the owner bounds the slots per
 * tenant and in all, and a tenant over its bound is `overflowed` (its searches must go elsewhere).
 */
export const CHUNKS = 16;
const CHUNK_BITS = 16;
const WORDS = 8;
const NONE = -1;

export interface HammingEntry {
  /** The row's id where the full record lives. */
  id: number;
  tenantId: string;
  alg: string;
  /** 32 bytes, most significant bit first. */
  bits: Uint8Array;
}

export interface HammingHit {
  id: number;
  distance: number;
}

export interface HammingIndexLimits {
  maxSlots: number;
  maxSlotsPerTenant: number;
}

/** The 16 chunks of 16 bits of a 256-bit hash, most significant first. */
export function chunksOf(bits: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < CHUNKS; i++) out.push((bits[2 * i]! << 8) | bits[2 * i + 1]!);
  return out;
}

/** Every 16-bit value within Hamming distance `radius` of `value` (1, 17, 137, … values). */
export function neighbours(value: number, radius: number): number[] {
  const out = [value];
  let frontier = [{ v: value, from: 0 }];
  for (let d = 1; d <= radius; d++) {
    const next: Array<{ v: number; from: number }> = [];
    for (const { v, from } of frontier)
      for (let b = from; b < CHUNK_BITS; b++) next.push({ v: v ^ (1 << b), from: b + 1 });
    for (const n of next) out.push(n.v);
    frontier = next;
  }
  return out;
}

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

function grow<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(a: T, size: number): T {
  const ctor = a.constructor as new (n: number) => T;
  const out = new ctor(size);
  out.set(a);
  return out;
}

/** Room for chained slots after a compaction (grown by doubling). */
const MIN_TAIL = 4096;

export class HammingIndex {
  private slots = 0;
  private capacity = 0;
  private words = new Uint32Array(0);
  private ids = new Float64Array(0);
  private tenantOf = new Int32Array(0);
  private algOf = new Uint8Array(0);
  /** Per chunk: slots below it are in the sorted runs, the others in the chains. */
  private readonly sortedTo = new Int32Array(CHUNKS);
  /** Per chunk: where each value's run begins in `members` (65,537 entries; none before the first compaction). */
  private readonly starts: Array<Uint32Array | undefined> = new Array<undefined>(CHUNKS).fill(undefined);
  /** Per chunk: the sorted slots, by chunk value then slot. */
  private readonly members: Array<Int32Array | undefined> = new Array<undefined>(CHUNKS).fill(undefined);
  private readonly heads: Int32Array[] = Array.from({ length: CHUNKS }, () =>
    new Int32Array(1 << CHUNK_BITS).fill(NONE),
  );
  /** Per chunk: the chain link of slot `sortedTo[c] + i` at i. */
  private readonly next: Int32Array[] = Array.from({ length: CHUNKS }, () => new Int32Array(MIN_TAIL));
  private readonly tenants = new Map<string, number>();
  private readonly perTenant: number[] = [];
  private readonly algs = new Map<string, number>();
  private readonly overflow = new Set<string>();
  /** The XOR masks of the chunk values within each per-chunk radius (1, 17, 137, … of them), made once. */
  private readonly masks = new Map<number, Int32Array>();

  constructor(private readonly limits: HammingIndexLimits) {}

  get size(): number {
    return this.slots;
  }

  /** Slots in the chains of the least recently compacted chunk (what a `compact` would sort). */
  get unsorted(): number {
    return this.slots - Math.min(...this.sortedTo);
  }

  /** True when some of the tenant's rows could not be held: its searches here would miss them. */
  overflowed(tenantId: string): boolean {
    return this.overflow.has(tenantId);
  }

  /** True when any tenant overflowed (a search across tenants would miss rows). */
  anyOverflowed(): boolean {
    return this.overflow.size > 0;
  }

  /** Holds the entry unless its tenant or the whole index is at its bound (then the tenant is marked overflowed). */
  add(entry: HammingEntry): boolean {
    let tenant = this.tenants.get(entry.tenantId);
    if (tenant === undefined) {
      tenant = this.perTenant.length;
      this.tenants.set(entry.tenantId, tenant);
      this.perTenant.push(0);
    }
    if (this.slots >= this.limits.maxSlots || this.perTenant[tenant]! >= this.limits.maxSlotsPerTenant) {
      this.overflow.add(entry.tenantId);
      return false;
    }
    let alg = this.algs.get(entry.alg);
    if (alg === undefined) {
      if (this.algs.size >= 255) throw new RangeError('too many algorithms in one index');
      alg = this.algs.size;
      this.algs.set(entry.alg, alg);
    }
    if (this.slots === this.capacity) this.reserve(Math.max(1024, this.capacity * 2));
    const slot = this.slots++;
    this.perTenant[tenant]!++;
    const b = entry.bits;
    for (let w = 0; w < WORDS; w++)
      this.words[slot * WORDS + w] =
        ((b[4 * w]! << 24) | (b[4 * w + 1]! << 16) | (b[4 * w + 2]! << 8) | b[4 * w + 3]!) >>> 0;
    this.ids[slot] = entry.id;
    this.tenantOf[slot] = tenant;
    this.algOf[slot] = alg;
    for (let c = 0; c < CHUNKS; c++) {
      const value = (b[2 * c]! << 8) | b[2 * c + 1]!;
      const link = slot - this.sortedTo[c]!;
      if (link >= this.next[c]!.length) this.next[c] = grow(this.next[c]!, this.next[c]!.length * 2);
      const head = this.heads[c]!;
      this.next[c]![link] = head[value]!;
      head[value] = slot;
    }
    return true;
  }

  /**
   * Sorts every slot into chunk `chunk`'s runs (every chunk's without one) and empties its chains: a counting
   * sort, linear in the slots. One chunk at a time lets the owner interleave other work (a million slots take
   * tens of milliseconds a chunk); searches are right whichever chunks are sorted.
   */
  compact(chunk?: number): void {
    if (chunk === undefined) {
      for (let c = 0; c < CHUNKS; c++) this.compact(c);
      return;
    }
    const n = this.slots;
    if (n === this.sortedTo[chunk]) return;
    const words = this.words;
    const word = chunk >> 1;
    const shift = chunk & 1 ? 0 : 16;
    const buckets = 1 << CHUNK_BITS;
    const starts = new Uint32Array(buckets + 1);
    for (let slot = 0; slot < n; slot++) starts[((words[slot * WORDS + word]! >>> shift) & 0xffff) + 1]!++;
    for (let v = 0; v < buckets; v++) starts[v + 1]! += starts[v]!;
    const fill = starts.slice(0, buckets);
    const members = new Int32Array(n);
    for (let slot = 0; slot < n; slot++) members[fill[(words[slot * WORDS + word]! >>> shift) & 0xffff]!++] = slot;
    this.starts[chunk] = starts;
    this.members[chunk] = members;
    this.heads[chunk]!.fill(NONE);
    this.next[chunk] = new Int32Array(MIN_TAIL);
    this.sortedTo[chunk] = n;
  }

  /**
   * Every held entry within `radius` of `bits` (of the tenant when given, of the algorithm when given), each once,
   * with its distance; unordered.
   */
  search(bits: Uint8Array, radius: number, filter: { tenantId?: string; alg?: string } = {}): HammingHit[] {
    if (radius < 0 || radius >= 2 * CHUNKS * CHUNK_BITS) throw new RangeError('radius out of range');
    const tenant = filter.tenantId === undefined ? NONE : (this.tenants.get(filter.tenantId) ?? -2);
    const alg = filter.alg === undefined ? NONE : (this.algs.get(filter.alg) ?? -2);
    if (tenant === -2 || alg === -2) return [];
    const q = new Uint32Array(WORDS);
    for (let w = 0; w < WORDS; w++)
      q[w] = ((bits[4 * w]! << 24) | (bits[4 * w + 1]! << 16) | (bits[4 * w + 2]! << 8) | bits[4 * w + 3]!) >>> 0;
    const masks = this.masksWithin(Math.floor(radius / CHUNKS));
    const found = new Map<number, number>();
    const words = this.words;
    const tenantOf = this.tenantOf;
    const algOf = this.algOf;
    // Distance first: almost every candidate fails it, and its tenant and algorithm are then never read (each is
    // another cache miss at a million slots).
    const check = (slot: number): void => {
      const base = slot * WORDS;
      let d = 0;
      for (let w = 0; w < WORDS && d <= radius; w++) d += popcount32((words[base + w]! ^ q[w]!) >>> 0);
      if (d > radius) return;
      if (tenant !== NONE && tenantOf[slot] !== tenant) return;
      if (alg !== NONE && algOf[slot] !== alg) return;
      found.set(slot, d);
    };
    for (let c = 0; c < CHUNKS; c++) {
      const chunk = (bits[2 * c]! << 8) | bits[2 * c + 1]!;
      const head = this.heads[c]!;
      const next = this.next[c]!;
      const sortedTo = this.sortedTo[c]!;
      const starts = this.starts[c];
      const members = this.members[c];
      for (let m = 0; m < masks.length; m++) {
        const value = chunk ^ masks[m]!;
        if (starts && members) for (let i = starts[value]!, end = starts[value + 1]!; i < end; i++) check(members[i]!);
        for (let slot = head[value]!; slot !== NONE; slot = next[slot - sortedTo]!) check(slot);
      }
    }
    return [...found].map(([slot, distance]) => ({ id: this.ids[slot]!, distance }));
  }

  /** The XOR masks of the chunk values within a per-chunk radius, made once per radius. */
  private masksWithin(radius: number): Int32Array {
    let masks = this.masks.get(radius);
    if (!masks) {
      masks = Int32Array.from(neighbours(0, radius));
      this.masks.set(radius, masks);
    }
    return masks;
  }

  private reserve(capacity: number): void {
    this.words = grow(this.words, capacity * WORDS);
    this.ids = grow(this.ids, capacity);
    this.tenantOf = grow(this.tenantOf, capacity);
    this.algOf = grow(this.algOf, capacity);
    this.capacity = capacity;
  }
}
