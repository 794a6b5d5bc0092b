import { describe, expect, it } from 'vitest';
import { isCheckTooComplex } from '../../src/engine/budget.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { THE_WALK } from '../../src/engine/walk-pairs.ts';
import { grant } from './fixtures.ts';

/**
 * The process's one walk (walk-pairs.ts): every tenant's checks walk in the same storage, kept from
 * walk to walk, so that a large walk does not leave its arrays to be grown again by the next
 * (docs/measurements.md, session 32: a check on a fan-out graph made 1.6 MB of garbage).
 */
const RELATIONS = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7', 'r8'];
const NODES = 150;
const fanOut = new CompiledSchema([
  { name: 'node', relations: { parent: {}, ...Object.fromEntries(RELATIONS.map((r) => [r, { includes: RELATIONS.map((t) => `parent->${t}`) }])) } },
  { name: 'user', relations: null },
]);

describe('the walk', () => {
  it("keeps a large walk's storage for the next walk, whichever tenant's index walks next", () => {
    // Every node the parent of every other: a check's second level is every node under every relation.
    const wide = new GrantIndex();
    for (let p = 0; p < NODES; p++) for (let c = 0; c < NODES; c++) if (c !== p) wide.add(grant(`node:n${p}`, 'parent', `node:n${c}`));
    const small = new GrantIndex();
    small.add(grant('user:ann', 'r1', 'node:a'));

    const query = { subject: parseRef('node:n1', 'subject'), relation: 'r1', object: parseRef('node:n0', 'object') };
    let refused: unknown;
    try {
      wide.check(fanOut, query);
    } catch (error) {
      refused = error;
    }
    expect(isCheckTooComplex(refused)).toBe(true);
    const pairs = THE_WALK.size;
    expect(pairs).toBeGreaterThan(1_024);

    expect(small.check(fanOut, { subject: parseRef('user:ann', 'subject'), relation: 'r1', object: parseRef('node:a', 'object') })).toBe(true);
    expect(THE_WALK.size).toBe(1);
    // The small walk wrote into the arrays the large one grew, without cutting them.
    expect(THE_WALK.objects.length).toBeGreaterThanOrEqual(pairs);
  });
});
