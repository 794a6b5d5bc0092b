import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NO_SLOT, SlotTable } from '../../src/engine/slot-table.ts';
import { scaled } from '../properties.ts';

/** SlotTable (windowed-grants.ts's lookups) answers as a Map of the slots by their keys, through puts, deletes and fits. */
describe('SlotTable', () => {
  const SLOTS = 64;
  // Keys from a few values, so that keys share their first parts and cells collide.
  const key = fc.tuple(fc.nat(3), fc.nat(3), fc.nat(3));
  const step = fc.oneof(
    fc.record({ op: fc.constant('put' as const), slot: fc.nat(SLOTS - 1), key }),
    fc.record({ op: fc.constant('delete' as const), slot: fc.nat(SLOTS - 1) }),
    fc.record({ op: fc.constant('fit' as const) }),
  );

  it.each([1, 2, 3] as const)('finds each slot by its key of %i parts, and nothing else', (width) => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 300 }), (steps) => {
        const columns = [new Int32Array(SLOTS), new Int32Array(SLOTS), new Int32Array(SLOTS)];
        const table = new SlotTable(width);
        table.keysIn(columns.slice(0, width));
        const keyOf = (parts: number[]) => parts.slice(0, width).join(' ');
        const model = new Map<string, number>();
        const keyOfSlot = new Map<number, string>();
        for (const s of steps) {
          if (s.op === 'put') {
            // A slot's key is set while it is out of the table, as a windowed grant's fields are.
            if (keyOfSlot.has(s.slot)) continue;
            s.key.forEach((part, i) => (columns[i]![s.slot] = part));
            const k = keyOf(s.key);
            const replaced = model.get(k);
            if (replaced !== undefined) keyOfSlot.delete(replaced);
            model.set(k, s.slot);
            keyOfSlot.set(s.slot, k);
            table.put(s.slot);
          } else if (s.op === 'delete') {
            const k = keyOfSlot.get(s.slot);
            if (k === undefined) continue;
            model.delete(k);
            keyOfSlot.delete(s.slot);
            table.delete(s.slot);
          } else {
            table.fit();
          }
        }
        // A key of fewer parts is asked with the parts it lacks 0, as keyOf reads them.
        const range = (used: boolean) => (used ? [0, 1, 2, 3] : [0]);
        for (const a of range(true))
          for (const b of range(width > 1))
            for (const c of range(width > 2)) expect(table.find(a, b, c)).toBe(model.get(keyOf([a, b, c])) ?? NO_SLOT);
      }),
      { numRuns: scaled(100) },
    );
  });

  it('keeps finding every slot as it grows past its first cells and shrinks back', () => {
    const columns = [Int32Array.from({ length: 1_000 }, (_, i) => i)];
    const table = new SlotTable(1);
    table.keysIn(columns);
    for (let slot = 0; slot < 1_000; slot++) table.put(slot);
    for (let slot = 0; slot < 990; slot++) table.delete(slot);
    expect([table.find(0), table.find(989), table.find(990), table.find(999), table.find(1_000)]).toEqual([NO_SLOT, NO_SLOT, 990, 999, NO_SLOT]);
  });
});
