/**
 * Multi-index hashing in memory over 256-bit hashes: 16 tables, one per 16-bit chunk, each a bucket per chunk
 * value chained through the slots (head[value] → slot → next[slot] → …, -1 ends a chain). By pigeonhole a hash
 * within distance r of the query has a chunk within floor(r/16) of the query's chunk, so the candidates are the
 * chains of the query chunks' neighbours, and each is confirmed by its full distance (8 popcounts).
 * About 110 bytes a slot (hash 32, id 8, tenant 4, alg 1, 16 chain links 64): the owner bounds the slots per tenant
 * and in all, and a tenant over its bound is `overflowed` (its searches must go elsewhere).
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

function grow<T extends Int32Array | Uint32Array | Float64Array | Uint8Array>(a: T, size: number, fill?: number): T {
  const ctor = a.constructor as new (n: number) => T;
  const out = new ctor(size);
  out.set(a);
  if (fill !== undefined) out.fill(fill, a.length);
  return out;
}

export class HammingIndex {
  private slots = 0;
  private capacity = 0;
  private words = new Uint32Array(0);
  private ids = new Float64Array(0);
  private tenantOf = new Int32Array(0);
  private algOf = new Uint8Array(0);
  private readonly heads: Int32Array[] = Array.from({ length: CHUNKS }, () =>
    new Int32Array(1 << CHUNK_BITS).fill(NONE),
  );
  private next: Int32Array[] = Array.from({ length: CHUNKS }, () => new Int32Array(0));
  private readonly tenants = new Map<string, number>();
  private readonly perTenant: number[] = [];
  private readonly algs = new Map<string, number>();
  private readonly overflow = new Set<string>();

  constructor(private readonly limits: HammingIndexLimits) {}

  get size(): number {
    return this.slots;
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
    const chunks = chunksOf(b);
    for (let c = 0; c < CHUNKS; c++) {
      const head = this.heads[c]!;
      this.next[c]![slot] = head[chunks[c]!]!;
      head[chunks[c]!] = slot;
    }
    return true;
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
    const perChunk = Math.floor(radius / CHUNKS);
    const chunks = chunksOf(bits);
    const found = new Map<number, number>();
    const words = this.words;
    for (let c = 0; c < CHUNKS; c++) {
      const head = this.heads[c]!;
      const next = this.next[c]!;
      for (const value of neighbours(chunks[c]!, perChunk)) {
        for (let slot = head[value]!; slot !== NONE; slot = next[slot]!) {
          // Distance first: almost every candidate fails it, and its tenant and algorithm are then never read
          // (each is another cache miss at a million slots).
          const base = slot * WORDS;
          let d = 0;
          for (let w = 0; w < WORDS && d <= radius; w++) d += popcount32((words[base + w]! ^ q[w]!) >>> 0);
          if (d > radius) continue;
          if (tenant !== NONE && this.tenantOf[slot] !== tenant) continue;
          if (alg !== NONE && this.algOf[slot] !== alg) continue;
          found.set(slot, d);
        }
      }
    }
    return [...found].map(([slot, distance]) => ({ id: this.ids[slot]!, distance }));
  }

  private reserve(capacity: number): void {
    this.words = grow(this.words, capacity * WORDS);
    this.ids = grow(this.ids, capacity);
    this.tenantOf = grow(this.tenantOf, capacity);
    this.algOf = grow(this.algOf, capacity);
    this.next = this.next.map((n) => grow(n, capacity, NONE));
    this.capacity = capacity;
  }
}
