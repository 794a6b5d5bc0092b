import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { editDistanceWithin, nearestName } from '../../src/engine/nearest.ts';
import { scaled } from '../properties.ts';

/** Levenshtein distance the textbook way, every cell computed: what the banded one must agree with. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      rows[i]![j] = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return rows[a.length]![b.length]!;
}

describe('editDistanceWithin', () => {
  it('is the edit distance when within the bound, else undefined', () => {
    const name = fc.string({ unit: fc.constantFrom('a', 'b', 'c'), maxLength: 9 });
    fc.assert(
      fc.property(name, name, fc.nat(4), (a, b, max) => {
        const distance = editDistance(a, b);
        expect(editDistanceWithin(a, b, max)).toBe(distance <= max ? distance : undefined);
      }),
      { numRuns: scaled(2000) },
    );
  });
});

describe('nearestName', () => {
  const relations = ['editor', 'owner', 'parent', 'viewer'];

  it.each([
    ['viewr', 'viewer'],
    ['veiwer', 'viewer'],
    ['viewers', 'viewer'],
    ['owners', 'owner'],
    ['paretn', 'parent'],
  ])('suggests %s -> %s', (typo, meant) => {
    expect(nearestName(typo, relations)).toBe(meant);
  });

  it('suggests nothing that is not a typo away, one edit for a name of three letters or fewer', () => {
    expect(nearestName('approver', relations)).toBeUndefined();
    expect(nearestName('member', relations)).toBeUndefined();
    expect(nearestName('own', relations)).toBeUndefined();
    expect(nearestName('ab', ['ax', 'xy'])).toBe('ax');
    expect(nearestName('ab', ['xy'])).toBeUndefined();
  });

  it('takes the nearest, the first of those equally near', () => {
    expect(nearestName('reader', ['leader', 'readers', 'reade'])).toBe('leader');
    expect(nearestName('abcd', ['abxy', 'abcx', 'abdc'])).toBe('abcx');
  });
});
