import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MarkedNodes } from '../../src/engine/marked-nodes.ts';
import { scaled } from '../properties.ts';

/** MarkedNodes answers as the Set of the subject and its groups would, marking after marking. */
describe('MarkedNodes', () => {
  it('holds exactly the last marking: its size, membership and members are a Set of the same nodes', () => {
    const marking = fc.record({ self: fc.nat(3_000), groups: fc.array(fc.nat(3_000), { maxLength: 50 }) });
    fc.assert(
      fc.property(fc.array(marking, { minLength: 1, maxLength: 8 }), (markings) => {
        const marked = new MarkedNodes();
        for (const { self, groups } of markings) marked.mark(self, groups, 3_001);
        const { self, groups } = markings.at(-1)!;
        const expected = new Set([self, ...groups]);
        expect(marked.size).toBe(expected.size);
        const nodes = Array.from({ length: 3_001 }, (_, node) => node);
        expect(nodes.filter((node) => marked.has(node))).toEqual(nodes.filter((node) => expected.has(node)));
        expect(new Set(marked)).toEqual(expected);
      }),
      { numRuns: scaled(100) },
    );
  });

  it('grows with the index: a node numbered past its first length is marked', () => {
    const marked = new MarkedNodes().mark(5_000, [70_000, 3], 70_001);
    expect([marked.has(70_000), marked.has(5_000), marked.has(3), marked.has(4)]).toEqual([true, true, true, false]);
  });
});
