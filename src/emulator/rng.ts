/**
 * Small, fast, deterministic hashing and random numbers for the emulator's data.
 * Every record is a pure function of (seed, coordinates), so data is computed lazily and memory
 * stays flat whatever the span or rows per day.
 */

/** Mixes 32-bit integers into one well-spread 32-bit hash (murmur3 finalizer over a running state). */
export function hashInts(...values: number[]): number {
  let h = 0x9e3779b9;
  for (const v of values) {
    h = Math.imul(h ^ (v | 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** 32-bit FNV-1a of a string, for seeding from text such as ids. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A uniform float in [0, 1) from a 32-bit hash. */
export function unit(hash: number): number {
  return hash / 4294967296;
}

/** mulberry32: a tiny seeded PRNG; returns floats in [0, 1). */
export function createRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Picks an index by cumulative weights (`cumulative` ends at 1). */
export function pickWeighted(cumulative: readonly number[], r: number): number {
  for (let i = 0; i < cumulative.length; i++) if (r < cumulative[i]!) return i;
  return cumulative.length - 1;
}

/** Deterministic Fisher-Yates shuffle in place. */
export function shuffleInPlace<T>(items: T[], rng: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    const tmp = items[i]!;
    items[i] = items[j]!;
    items[j] = tmp;
  }
  return items;
}
