import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdTable } from '../../src/engine/id-table.ts';
import { assertProperty, scaled } from '../properties.ts';

/** What the table and a Map of the same ids say after each operation and at the end. */
interface Said {
  sizes: number[];
  found: (number | undefined)[];
  nodes: number[];
}

/**
 * Ids named and forgotten as NodeNames does (a node per id, freed nodes reused, the ids by node
 * beside the table), asked of the table and of a Map alike.
 */
function replay(operations: readonly { id: string; add: boolean }[]): { table: Said; map: Said } {
  const table = new IdTable();
  const map = new Map<string, number>();
  const ids: (string | undefined)[] = [];
  const free: number[] = [];
  const said = { table: { sizes: [], found: [], nodes: [] } as Said, map: { sizes: [], found: [], nodes: [] } as Said };
  for (const { id, add } of operations) {
    if (add && !map.has(id)) {
      const node = free.pop() ?? ids.length;
      table.add(id, node);
      ids[node] = id;
      map.set(id, node);
    } else if (!add) {
      table.delete(id, ids);
      const node = map.get(id);
      if (node !== undefined) {
        ids[node] = undefined;
        free.push(node);
        map.delete(id);
      }
    }
    said.table.sizes.push(table.size);
    said.map.sizes.push(map.size);
  }
  for (const { id } of operations) {
    said.table.found.push(table.get(id, ids));
    said.map.found.push(map.get(id));
  }
  said.table.nodes = [...table.values()].sort((a, b) => a - b);
  said.map.nodes = [...map.values()].sort((a, b) => a - b);
  return said;
}

describe('IdTable', () => {
  it('finds what a Map of the same ids finds, through adds and deletes that grow, shrink and wrap the table', async () => {
    // Few distinct ids, so that deletes hit held ones and probes run into each other's slots.
    const id = fc.oneof(
      fc.integer({ min: 0, max: 300 }).map((n) => `d${n}`),
      fc.string({ maxLength: 4 }),
    );
    await assertProperty(
      fc.asyncProperty(fc.array(fc.record({ id, add: fc.boolean() }), { minLength: 300, maxLength: 1500 }), async (operations) => {
        const { table, map } = replay(operations);
        expect(table).toEqual(map);
      }),
      { numRuns: scaled(20), endOnFailure: true },
    );
  });

  it('keeps every id of a namespace of thousands, then of none', () => {
    const many = Array.from({ length: 5000 }, (_, n) => ({ id: `u${n}`, add: true }));
    for (const forgotten of [many.filter((_, n) => n % 3 === 0), many]) {
      const { table, map } = replay([...many, ...forgotten.map(({ id }) => ({ id, add: false }))]);
      expect(table).toEqual(map);
    }
  });
});
