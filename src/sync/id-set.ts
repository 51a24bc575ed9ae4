/**
 * A compact set of 52-bit string hashes, to tell whether a window's ids are all distinct without
 * keeping the ids: 16 bytes an id (a JS Set of numbers takes several times that). A hash
 * collision only reports a duplicate that is not there, which costs a needless dedupe, never a
 * lost row; at 52 bits it is about one in ten thousand for a million ids.
 */

/** Two independent 32-bit FNV-1a hashes folded into an integer below 2^52. Pure. */
export function hash52(text: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a >>> 12) * 0x100000000 + (b >>> 0);
}

export class HashSet52 {
  private slots: Float64Array;
  private count = 0;

  constructor(capacity = 1024) {
    let size = 16;
    while (size < capacity * 2) size *= 2;
    // 0 marks an empty slot, so hashes are stored plus one.
    this.slots = new Float64Array(size);
  }

  get size(): number {
    return this.count;
  }

  /** Adds a hash; returns false when it was already there. */
  add(hash: number): boolean {
    if (this.count * 2 >= this.slots.length) this.grow();
    return this.insert(hash + 1);
  }

  private insert(stored: number): boolean {
    const mask = this.slots.length - 1;
    let i = (stored % 0x100000000) & mask;
    for (;;) {
      const v = this.slots[i]!;
      if (v === 0) {
        this.slots[i] = stored;
        this.count += 1;
        return true;
      }
      if (v === stored) return false;
      i = (i + 1) & mask;
    }
  }

  private grow(): void {
    const old = this.slots;
    this.slots = new Float64Array(old.length * 2);
    this.count = 0;
    for (const v of old) if (v !== 0) this.insert(v);
  }
}
