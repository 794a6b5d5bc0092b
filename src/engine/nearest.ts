/*
 * "Did you mean" for names: the nearest by edit distance (Levenshtein), when close enough to be a
 * typo. Hand-written (no library among the dependencies does it), and banded: only distances up to
 * the bound are computed, so a bulk check of a thousand unknown relations stays cheap.
 */

/** The edit distance of a typo worth suggesting for `name`: one edit in a short name, two otherwise. */
const typoEdits = (name: string): number => (name.length <= 3 ? 1 : 2);

/** The edit distance between `a` and `b` when at most `max`, else undefined; only cells within `max` of the diagonal are computed. */
export function editDistanceWithin(a: string, b: string, max: number): number | undefined {
  if (Math.abs(a.length - b.length) > max) return undefined;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => (j <= max ? j : Infinity));
  for (let i = 1; i <= a.length; i++) {
    const current = new Array<number>(b.length + 1).fill(Infinity);
    if (i <= max) current[0] = i;
    for (let j = Math.max(1, i - max); j <= Math.min(b.length, i + max); j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(substitution, previous[j]! + 1, current[j - 1]! + 1);
    }
    previous = current;
  }
  const distance = previous[b.length]!;
  return distance <= max ? distance : undefined;
}

/** The candidate nearest to `name`, when it is a typo's distance away (the first of the nearest, in the order given). */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  let nearest: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistanceWithin(name, candidate, nearest ? nearest.distance - 1 : typoEdits(name));
    if (distance !== undefined) nearest = { candidate, distance };
  }
  return nearest?.candidate;
}
