import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundaryHeap } from '../../src/engine/boundary-heap.ts';
import { scaled } from '../properties.ts';

/** BoundaryHeap (windowed-grants.ts's boundaries) gives its entries in order, soonest or latest first, through pushes, pops and keeps. */
describe('BoundaryHeap', () => {
  const step = fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('push' as const), slot: fc.nat(40) }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('pop' as const) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('keep' as const), odd: fc.boolean() }) },
  );

  it.each([1, -1] as const)('in order %i, is the first of the entries a list sorted so would hold', (order) => {
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 200 }),
        fc.array(fc.integer({ min: -1_000, max: 1_000 }), { minLength: 200, maxLength: 200 }),
        (steps, instants) => {
          const heap = new BoundaryHeap(order);
          // Entries as (instant, slot, generation); instants distinct, so that the first is one entry.
          let model: [number, number, number][] = [];
          const used = new Set<number>();
          steps.forEach((s, i) => {
            if (s.op === 'push') {
              const instant = instants[i]! + i / 1_000;
              if (used.has(instant)) return;
              used.add(instant);
              heap.push(instant, s.slot, i);
              model.push([instant, s.slot, i]);
            } else if (s.op === 'pop') {
              if (model.length === 0) return;
              heap.pop();
              model.shift();
            } else {
              const live = (slot: number) => slot % 2 === (s.odd ? 1 : 0);
              heap.keep(live);
              model = model.filter(([, slot]) => live(slot));
            }
            model.sort((a, b) => order * (a[0] - b[0]));
            expect(heap.length).toBe(model.length);
            expect(heap.top).toBe(model[0]?.[0] ?? order * Infinity);
            expect(model.length === 0 ? [] : [heap.topSlot, heap.topGeneration]).toEqual(model[0]?.slice(1) ?? []);
          });
          // Popped to the end, in order.
          const popped: number[] = [];
          while (heap.length > 0) {
            popped.push(heap.top);
            heap.pop();
          }
          expect(popped).toEqual(model.map(([instant]) => instant));
        },
      ),
      { numRuns: scaled(100) },
    );
  });

  it('moves an entry up or down one level a step', () => {
    const heap = new BoundaryHeap(1);
    for (const instant of [5, 4, 3, 2, 1]) heap.push(instant, 0, 0);
    // 4 goes up one level, 3 one, 2 two, 1 two.
    expect(heap.steps).toBe(6);
    heap.pop();
    // The last entry, 3, takes the top and goes down one level.
    expect([heap.top, heap.steps]).toEqual([2, 7]);
  });
});
