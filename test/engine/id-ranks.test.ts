import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdRanks } from '../../src/engine/id-ranks.ts';
import { drain } from '../../src/engine/work-meter.ts';
import { assertProperty, scaled } from '../properties.ts';

/** Nodes of two namespaces named and forgotten as GrantIndex does, free nodes reused, arrays grown. */
class Nodes {
  readonly ranks = new IdRanks(4);
  ids: (string | undefined)[] = [];
  namespaces = new Int32Array(4).fill(-1);
  readonly byNs = [new Map<string, number>(), new Map<string, number>()];
  private readonly free: number[] = [];

  constructor() {
    this.ranks.renumbered(0);
    this.ranks.renumbered(1);
  }

  name(ns: number, id: string): void {
    if (this.byNs[ns]!.has(id)) return;
    let node = this.free.pop();
    if (node === undefined) {
      node = this.ids.length;
      if (node === this.namespaces.length) {
        const grown = new Int32Array(node * 2).fill(-1);
        grown.set(this.namespaces);
        this.namespaces = grown;
        this.ranks.resize(node * 2);
      }
    }
    this.byNs[ns]!.set(id, node);
    this.namespaces[node] = ns;
    this.ids[node] = id;
    this.ranks.changed(node, ns);
  }

  forget(ns: number, id: string): void {
    const node = this.byNs[ns]!.get(id);
    if (node === undefined) return;
    this.byNs[ns]!.delete(id);
    this.ranks.changed(node, ns);
    this.ids[node] = undefined;
    this.free.push(node);
  }
}

const byBytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

describe('IdRanks', () => {
  it('pages and compares ids as their byte order does, ranked or not, through names given, taken back and reused', async () => {
    const id = fc.stringMatching(/^[a-e]{1,3}$/);
    const step = fc.oneof(
      fc.record({ op: fc.constant('name' as const), ns: fc.integer({ min: 0, max: 1 }), id }),
      fc.record({ op: fc.constant('forget' as const), ns: fc.integer({ min: 0, max: 1 }), id }),
      fc.record({ op: fc.constant('rank' as const), ns: fc.integer({ min: 0, max: 1 }), always: fc.boolean() }),
      fc.record({
        op: fc.constant('look' as const),
        ns: fc.integer({ min: 0, max: 1 }),
        after: id,
        limit: fc.integer({ min: 1, max: 6 }),
        pick: fc.nat(),
      }),
    );
    await assertProperty(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const nodes = new Nodes();
        // What each compare step saw, and what it should have: compared once all steps ran.
        const seen: unknown[] = [];
        const expected: unknown[] = [];
        for (const s of steps) {
          if (s.op === 'name') nodes.name(s.ns, s.id);
          else if (s.op === 'forget') nodes.forget(s.ns, s.id);
          else if (s.op === 'rank' && s.always) drain(nodes.ranks.ranking(s.ns, nodes.byNs[s.ns]!, nodes.ids, nodes.namespaces));
          else if (s.op === 'rank') nodes.ranks.refresh(s.ns, nodes.byNs[s.ns]!, nodes.ids, nodes.namespaces);
          else {
            const { ranks, ids, namespaces } = nodes;
            // Listings refresh first (a no-op unless enough changed), then compare and page.
            ranks.refresh(s.ns, nodes.byNs[s.ns]!, ids, namespaces);
            const firstAbove = ranks.firstAbove(s.ns, s.after, ids, namespaces);
            const all = [...nodes.byNs[s.ns]!.values()];
            // Any subset of the namespace's nodes: every other one from a point on.
            const subset = all.filter((_, i) => i >= s.pick % (all.length + 1) || i % 2 === 0);
            seen.push({
              above: all.map((node) => ranks.isAbove(node, s.after, firstAbove, ids)),
              smallest: ranks.smallest(s.ns, subset, s.limit, ids),
            });
            expected.push({
              above: all.map((node) => ids[node]! > s.after),
              smallest: subset
                .map((node) => ids[node]!)
                .sort(byBytes)
                .slice(0, s.limit),
            });
          }
        }
        expect(seen).toEqual(expected);
      }),
      { numRuns: scaled(400) },
    );
  });

  it('ranks a namespace again once more than RERANK_SLACK (1024) of its nodes changed since, not before', () => {
    const nodes = new Nodes();
    const ids = Array.from({ length: 1025 }, (_, i) => `d${String(i).padStart(4, '0')}`);
    const refresh = () => nodes.ranks.refresh(0, nodes.byNs[0]!, nodes.ids, nodes.namespaces);
    for (const id of ids.slice(1).toReversed()) nodes.name(0, id);
    refresh();
    // firstAbove counts ranked nodes only: none yet.
    expect(nodes.ranks.firstAbove(0, 'd0999', nodes.ids, nodes.namespaces)).toBe(0);
    nodes.name(0, ids[0]!);
    refresh();
    expect(nodes.ranks.firstAbove(0, 'd0999', nodes.ids, nodes.namespaces)).toBe(1000);
    expect(nodes.ranks.smallest(0, [...nodes.byNs[0]!.values()], 3, nodes.ids)).toEqual(ids.slice(0, 3));
  });
});
