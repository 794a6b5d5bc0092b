import { describe, expect, it } from 'vitest';
import { EdgeLists } from '../../src/engine/edge-lists.ts';
import { scaled } from '../properties.ts';

/** The node's pairs as `relation:other` strings, sorted. */
function pairsOf(lists: EdgeLists, node: number): string[] {
  const pairs: string[] = [];
  for (let i = lists.from(node); i < lists.to(node); i += 2) pairs.push(`${lists.arena[i]}:${lists.arena[i + 1]}`);
  return pairs.sort();
}

describe('EdgeLists', () => {
  it('holds, finds and removes pairs per node', () => {
    const lists = new EdgeLists(4);
    lists.add(3, 0, 7);
    lists.add(3, 1, 7);
    lists.add(5, 0, 3);
    expect(lists.has(3, 0, 7)).toBe(true);
    expect(lists.has(3, 0, 5)).toBe(false);
    expect(lists.has(9, 0, 7)).toBe(false);
    expect(lists.hasAny(3, 1, 2, [4, 7])).toBe(true);
    expect(lists.hasAny(3, 1, 2, [4])).toBe(false);
    expect(lists.othersWith(3, 0, [99])).toEqual([7]);
    expect(lists.remove(3, 0, 7)).toBe(true);
    expect(lists.remove(3, 0, 7)).toBe(false);
    expect(pairsOf(lists, 3)).toEqual(['1:7']);
    expect(pairsOf(lists, 5)).toEqual(['0:3']);
    expect(pairsOf(lists, 1000)).toEqual([]);
  });

  it("writes a relation's other nodes from a place in a list, and counts a long list's without writing them past a limit", () => {
    const lists = new EdgeLists(4);
    lists.add(3, 0, 7);
    lists.add(3, 1, 8);
    const into = [1, 2, 3];
    // Written over what was there, the length left as it is.
    expect(lists.othersAt(3, 0, into, 1, 0)).toBe(1);
    expect(into).toEqual([1, 7, 3]);
    for (let other = 0; other < 20; other++) lists.add(5, 0, other);
    const long: number[] = [];
    expect(lists.othersAt(5, 0, long, 0, 19)).toBe(20);
    expect(long).toEqual([]);
    expect(lists.othersAt(5, 0, long, 0, 20)).toBe(20);
    expect(long.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(lists.othersAt(5, 1, long, 0, 20)).toBe(0);
  });

  it('finds any of a set among the pairs of a relation, reading the smaller of the two on a long list', () => {
    const lists = new EdgeLists(4);
    for (let other = 0; other < 10; other++) lists.add(1, 0, other);
    lists.add(1, 2, 5);
    lists.add(9, 0, 3);
    const range = (from: number, count: number) => new Set(Array.from({ length: count }, (_, i) => from + i));
    // Node 1's list is long (indexed): a set smaller than its 10 pairs with relation 0, then larger ones.
    expect(lists.hasAnyOf(1, 0, new Set([7]))).toBe(true);
    expect(lists.hasAnyOf(1, 0, new Set([42]))).toBe(false);
    expect(lists.hasAnyOf(1, 0, range(9, 20))).toBe(true);
    expect(lists.hasAnyOf(1, 0, range(100, 20))).toBe(false);
    expect(lists.hasAnyOf(1, 1, new Set([5]))).toBe(false);
    expect(lists.hasAnyOf(1, 2, new Set([5, 6]))).toBe(true);
    // Node 9's is short: scanned.
    expect(lists.hasAnyOf(9, 0, new Set([3]))).toBe(true);
    expect(lists.hasAnyOf(9, 0, new Set([4]))).toBe(false);
  });

  it('agrees with a set of pairs through random churn, as lists grow past their map and shrink below it', () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const lists = new EdgeLists(8);
    const expected = new Map<number, Set<string>>();
    let longest = 0;
    const phase = scaled(10_000);
    const compactEvery = Math.round(phase * 0.3);
    // Few nodes and relations, many others: lists grow to a few hundred pairs, then shrink to none, twice.
    const steps = 4 * phase;
    // Rounds of 997 steps, each ending with every list compared whole with the model.
    for (let first = 0; first < steps; first += 997) {
      for (let step = first; step < Math.min(first + 997, steps); step++) {
        // Compacted now and then, so that lists in exact slabs grow, shrink and empty as well.
        if (step % compactEvery === compactEvery >> 1) lists.compact();
        const node = random(6) * random(6);
        let held = expected.get(node);
        if (held === undefined) expected.set(node, (held = new Set()));
        const growing = step % (2 * phase) < phase;
        const removing = random(4) === 0 ? growing : !growing;
        // A removal mostly picks a held pair; any other step a random one.
        const key = removing && held.size > 0 && random(8) !== 0 ? [...held][random(held.size)]! : `${random(3)}:${random(400)}`;
        const [relation, other] = key.split(':').map(Number) as [number, number];
        // What a removal answered and what the model says it should (nothing for an addition).
        const [removed, wasHeld] = removing ? [lists.remove(node, relation, other), held.delete(key)] : [];
        expect(removed).toBe(wasHeld);
        if (!removing && !held.has(key)) {
          lists.add(node, relation, other);
          held.add(key);
        }
        expect(lists.has(node, relation, other)).toBe(held.has(key));
        expect(lists.hasAny(node, relation, -1, [other])).toBe(held.has(key));
        const withRelation = [...held].filter((pair) => pair.startsWith(`${relation}:`)).map((pair) => Number(pair.split(':')[1]));
        expect(lists.othersWith(node, relation, []).sort((a, b) => a - b)).toEqual(withRelation.sort((a, b) => a - b));
        longest = Math.max(longest, held.size);
      }
      for (const [n, pairs] of expected) expect(pairsOf(lists, n)).toEqual([...pairs].sort());
    }
    expect(longest).toBeGreaterThan(100);
    for (const [n, pairs] of expected) {
      for (const pair of pairs) lists.remove(n, ...(pair.split(':').map(Number) as [number, number]));
      expect(pairsOf(lists, n)).toEqual([]);
    }
  });

  it('gives the room of emptied lists to others', () => {
    const lists = new EdgeLists(1024);
    const fill = (first: number) => {
      for (let node = first; node < first + 100; node++) for (let other = 0; other < 50; other++) lists.add(node, 0, other);
    };
    const empty = (first: number) => {
      for (let node = first; node < first + 100; node++) for (let other = 0; other < 50; other++) lists.remove(node, 0, other);
    };
    fill(0);
    const arenaLength = lists.arena.length;
    for (let round = 1; round <= 20; round++) {
      empty(100 * (round - 1));
      fill(100 * round);
    }
    expect(lists.arena.length).toBe(arenaLength);
    expect(pairsOf(lists, 2042)).toHaveLength(50);
    expect(pairsOf(lists, 42)).toEqual([]);
  });

  it('packs every list into exactly its pairs, which then grow and empty as before', () => {
    const lists = new EdgeLists(1024);
    // 3 pairs a node: slabs of 4 before compacting.
    for (let node = 0; node < 30_000; node++) for (let other = 0; other < 3; other++) lists.add(node, 1, other);
    expect(lists.arena.length).toBeGreaterThan(2 * 3 * 30_000);
    lists.compact();
    expect(lists.arena.length).toBe(2 * 3 * 30_000);
    expect(pairsOf(lists, 29_999)).toEqual(['1:0', '1:1', '1:2']);
    expect(lists.hasAny(123, 1, 7, [2])).toBe(true);
    for (let node = 0; node < 30_000; node += 2) lists.add(node, 2, 9);
    for (let node = 1; node < 30_000; node += 2) lists.remove(node, 1, 1);
    for (let node = 0; node < 30_000; node += 997) {
      expect(pairsOf(lists, node)).toEqual(node % 2 === 0 ? ['1:0', '1:1', '1:2', '2:9'] : ['1:0', '1:2']);
    }
    lists.compact();
    expect(lists.arena.length).toBe(2 * (15_000 * 4 + 15_000 * 2));
    expect(pairsOf(lists, 29_999)).toEqual(['1:0', '1:2']);
  });
});
