/** "Did you mean" for a mistyped flag: the closest known name, when one is close enough to be meant. */

/** Edits (insert, delete, replace, swap two neighbours) between `a` and `b`. Pure. */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The known name closest to `word`, if within a third of its length (at least one edit); else null. Pure. */
export function closest(word: string, known: readonly string[]): string | null {
  let best: { name: string; distance: number } | null = null;
  for (const name of known) {
    const distance = editDistance(word, name);
    if (best === null || distance < best.distance) best = { name, distance };
  }
  return best !== null && best.distance <= Math.max(1, Math.floor(word.length / 3)) ? best.name : null;
}
