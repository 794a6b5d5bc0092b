import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { CheckWalk } from '../../src/engine/check-walk.ts';
import type { CheckAnswer } from '../../src/engine/checker.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import type { Triple } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { assertProperty, scaled } from '../properties.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS, grant, SpentSlice } from './fixtures.ts';

/**
 * A bulk of checks on an index (bulk-checks.ts) answers each query as its single check does, though
 * it remembers walks for the checks after them (whole or cut short by the budget), keys them by object
 * and relation, and forgets them when the grants change while it gives way: random small tenants and
 * bulks with no database (docs/decisions.md#mutation-testing), each bulk against the checks one by one.
 */
const schema = new CompiledSchema([
  { name: 'document', relations: DOCUMENT_RELATIONS },
  { name: 'folder', relations: FOLDER_RELATIONS },
  { name: 'group', relations: null },
  { name: 'user', relations: null },
]);

const SUBJECTS = ['user:u0', 'user:u1', 'user:u2', 'group:g0', 'group:g1', 'folder:f0', 'folder:f1'];
/** Relations on objects as the schema declares them (group is open: member). */
const HELD = [
  ...['d0', 'd1', 'd2'].flatMap((id) => ['parent', 'owner', 'editor', 'viewer'].map((relation) => [relation, `document:${id}`])),
  ...['f0', 'f1', 'f2'].flatMap((id) => ['parent', 'viewer'].map((relation) => [relation, `folder:${id}`])),
  ...['g0', 'g1'].map((id) => ['member', `group:${id}`]),
];

const tripleArb = fc
  .tuple(fc.constantFrom(...SUBJECTS, 'user:*'), fc.constantFrom(...HELD))
  .map(([subject, [relation, object]]) => grant(subject, relation!, object!));
const queryArb = fc
  .tuple(fc.constantFrom(...SUBJECTS, 'user:u3'), fc.constantFrom(...HELD))
  .map(([subject, [relation, object]]) => grant(subject, relation!, object!));
/** Budgets that cut some walks short (and so some bulks' remembered walks), and one that cuts none. */
const budgetArb = fc.oneof(fc.integer({ min: 1, max: 24 }), fc.constant(25_000));

function indexOf(grants: readonly Triple[]): GrantIndex {
  const index = new GrantIndex();
  for (const g of grants) index.add(g);
  return index;
}

/** The answer as a value to compare: a problem by its type and detail. */
const named = (answer: CheckAnswer) => (typeof answer === 'boolean' ? answer : `${answer.type}: ${answer.detail}`);

function checkedAlone(index: GrantIndex, query: Triple, budget: number) {
  try {
    return named(index.check(schema, query, budget));
  } catch (error) {
    return named(error as CheckAnswer);
  }
}

describe('a bulk of checks on an index', () => {
  it('answers each query as its check alone does, whatever walks it remembers', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.array(tripleArb, { maxLength: 14 }),
        fc.array(queryArb, { minLength: 2, maxLength: 14 }),
        budgetArb,
        async (grants, queries, budget) => {
          const index = indexOf(grants);
          const alone = queries.map((q) => checkedAlone(index, q, budget));
          expect((await index.checkAll(schema, queries, budget)).map(named)).toEqual(alone);
        },
      ),
      { numRuns: scaled(300) },
    );
  });

  it('walks an object and relation once for the checks of many subjects on it', async () => {
    // d0's parents f0..f9, none viewed by anyone; 20 users, each a member of g0, who owns d1.
    const grants = [
      grant('group:g0', 'owner', 'document:d1'),
      ...Array.from({ length: 10 }, (_, i) => grant(`folder:f${i}`, 'parent', 'document:d0')),
    ];
    for (let u = 0; u < 20; u++) grants.push(grant(`user:u${u}`, 'member', 'group:g0'));
    const index = indexOf(grants);
    const queries = Array.from({ length: 20 }, (_, u) => grant(`user:u${u}`, 'viewer', 'document:d0'));
    const walks = vi.spyOn(CheckWalk.prototype, 'walkBackwards');
    try {
      expect(await index.checkAll(schema, queries)).toEqual(queries.map(() => false));
      expect(walks).toHaveBeenCalledTimes(1);
      walks.mockClear();
      // Past a budget of 5 (each user's group, d0's 3 pairs, then its 10 parents read), each user's check
      // walks again: the level cut short has no cost to charge the next subject (CheckWalk.heldOnAny).
      const alone = queries.map((q) => checkedAlone(index, q, 5));
      expect(alone.every((answer) => typeof answer !== 'boolean')).toBe(true);
      expect((await index.checkAll(schema, queries, 5)).map(named)).toEqual(alone);
    } finally {
      walks.mockRestore();
    }
  });

  it('forgets the walks it remembered when the grants change while it gives way', async () => {
    // u0's check walks d0 (viewer, editor, owner: no parent yet) and keeps it for u1's; before u1's,
    // f0 becomes d0's parent, and u1 views f0. (A subject or object no grant names is denied with no walk.)
    const index = indexOf([
      grant('user:u1', 'viewer', 'folder:f0'),
      grant('user:u0', 'member', 'group:g0'),
      grant('user:u2', 'owner', 'document:d0'),
    ]);
    const slice = new SpentSlice((k) => k === 1 && index.add(grant('folder:f0', 'parent', 'document:d0')));
    const queries = [grant('user:u0', 'viewer', 'document:d0'), grant('user:u1', 'viewer', 'document:d0')];
    expect(await index.checkAll(schema, queries, 25_000, { slice })).toEqual([false, true]);
  });

  it('answers each query from the grants at its turn when they change while it gives way', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.array(tripleArb, { maxLength: 14 }),
        fc.array(fc.tuple(queryArb, fc.option(tripleArb, { nil: undefined })), { minLength: 2, maxLength: 10 }),
        budgetArb,
        async (grants, steps, budget) => {
          // Before the k-th check, the k-th change (if any) flips a grant.
          const index = indexOf(grants);
          const flip = (at: GrantIndex, k: number) => steps[k]![1] !== undefined && at.flip(steps[k]![1]);
          const slice = new SpentSlice((k) => flip(index, k));
          const answers = await index.checkAll(
            schema,
            steps.map(([q]) => q),
            budget,
            { slice },
          );
          const replayed = indexOf(grants);
          const alone = steps.map(([q], k) => (flip(replayed, k), checkedAlone(replayed, q, budget)));
          expect(answers.map(named)).toEqual(alone);
        },
      ),
      { numRuns: scaled(200) },
    );
  });
});
