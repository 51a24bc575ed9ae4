/**
 * 52-bit string hashes, to tell whether a window's ids are all distinct without keeping the ids. A
 * hash collision only reports a duplicate that is not there, which costs a needless dedupe, never a
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

/**
 * The 52-bit hashes of a window's ids, appended as they come: 8 bytes an id (a hash set kept half
 * empty takes two to four times that, for every window in flight). Whether one repeats is
 * asked once, when the window's last page came (a sort).
 */
export class IdHashes {
  private hashes: Float64Array;
  private count = 0;

  constructor(capacity = 1024) {
    this.hashes = new Float64Array(Math.max(16, capacity));
  }

  get size(): number {
    return this.count;
  }

  add(hash: number): void {
    if (this.count === this.hashes.length) {
      const bigger = new Float64Array(this.hashes.length * 2);
      bigger.set(this.hashes);
      this.hashes = bigger;
    }
    this.hashes[this.count++] = hash;
  }

  /** Whether a hash was added more than once (sorts the hashes added so far). */
  hasRepeat(): boolean {
    const added = this.hashes.subarray(0, this.count).sort();
    for (let i = 1; i < added.length; i++) if (added[i] === added[i - 1]) return true;
    return false;
  }
}

/** A set of 52-bit hashes that answers at once whether one was added before: 16 bytes a hash (push: a file's rows). */
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
