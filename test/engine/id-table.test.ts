import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdTable } from '../../src/engine/id-table.ts';
import { assertProperty, scaled } from '../properties.ts';

/** Ids named and forgotten as NodeNames does: a node per id, freed nodes reused, the ids by node beside the table. */
function replay(operations: readonly { id: string; add: boolean }[]): void {
  const table = new IdTable();
  const model = new Map<string, number>();
  const ids: (string | undefined)[] = [];
  const free: number[] = [];
  for (const { id, add } of operations) {
    if (add && !model.has(id)) {
      const node = free.pop() ?? ids.length;
      table.add(id, node);
      ids[node] = id;
      model.set(id, node);
    } else if (!add) {
      table.delete(id, ids);
      const node = model.get(id);
      if (node !== undefined) {
        ids[node] = undefined;
        free.push(node);
        model.delete(id);
      }
    }
    expect(table.size).toBe(model.size);
  }
  for (const [id, node] of model) expect(table.get(id, ids)).toBe(node);
  for (const { id } of operations) if (!model.has(id)) expect(table.get(id, ids)).toBeUndefined();
  expect([...table.values()].sort((a, b) => a - b)).toEqual([...model.values()].sort((a, b) => a - b));
}

describe('IdTable', () => {
  it('finds what a Map of the same ids finds, through adds and deletes that grow, shrink and wrap the table', async () => {
    // Few distinct ids, so that deletes hit held ones and probes run into each other's slots.
    const id = fc.oneof(fc.integer({ min: 0, max: 300 }).map((n) => `d${n}`), fc.string({ maxLength: 4 }));
    await assertProperty(
      fc.asyncProperty(fc.array(fc.record({ id, add: fc.boolean() }), { minLength: 300, maxLength: 1500 }), async (operations) => replay(operations)),
      { numRuns: scaled(20), endOnFailure: true },
    );
  });

  it('keeps every id of a namespace of thousands, then of none', () => {
    const many = Array.from({ length: 5000 }, (_, n) => ({ id: `u${n}`, add: true }));
    replay([...many, ...many.filter((_, n) => n % 3 === 0).map(({ id }) => ({ id, add: false }))]);
    replay([...many, ...many.map(({ id }) => ({ id, add: false }))]);
  });
});
