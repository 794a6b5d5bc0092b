import { describe, expect, it } from 'vitest';
import { overBudget } from '../../src/engine/budget.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { IndexChecker } from '../../src/engine/index-checker.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { grant, RULED_DOCUMENT_RELATIONS } from './fixtures.ts';

/**
 * The steps a check in memory takes, counted as grantd_check_walk counts them (docs/model.md#model-limits):
 * the subject's groups, each level's pairs and the grants read through its arrows, and for a subject
 * of more than 8 groups the matching of each pair. A check is answered at exactly its steps and
 * refused one step short: the budget decides answers, so its count must not drift.
 */
describe('the steps of a check', () => {
  const schema = new CompiledSchema([
    { name: 'doc', relations: { parent: {}, owner: {}, viewer: { includes: ['owner', 'parent->viewer'] } } },
    { name: 'user', relations: null },
    { name: 'team', relations: null },
  ]);
  // doc:c's parent is doc:b, whose parent is doc:a, owned by team:t.
  const grants = [
    grant('doc:a', 'parent', 'doc:b'),
    grant('doc:b', 'parent', 'doc:c'),
    grant('team:t', 'owner', 'doc:a'),
    grant('user:ann', 'member', 'team:t'),
  ];
  const many = Array.from({ length: 9 }, (_, i) => grant('user:gil', 'member', `team:g${i}`));

  function index(): GrantIndex {
    const built = new GrantIndex();
    for (const g of [...grants, ...many, grant('user:zed', 'owner', 'doc:x')]) built.add(g);
    return built;
  }

  /** The check's answer within `budget`, and its steps; check-too-complex past them. */
  const stepsOf = (subject: string, budget: number) => {
    const built = index();
    const allowed = built.check(schema, grant(subject, 'viewer', 'doc:c'), budget);
    return { allowed, steps: built.lastCheckSteps };
  };

  it.each([
    // No group; three levels of two pairs (viewer and owner), each of c and b reading one parent grant: 2 + 1 + 2 + 1 + 2.
    ['user:zed', false, 8],
    // One group; found on the third level, once the second was counted: 1 + 3 + 3.
    ['user:ann', true, 7],
    // Nine groups, matched through a set: 9, and owner on doc:a has one holder to match: 9 + 3 + 3 + 1 + 2.
    ['user:gil', false, 18],
  ])('%s: %s in %i steps, refused one step short', (subject, allowed, steps) => {
    expect(stepsOf(subject, steps)).toEqual({ allowed, steps });
    expect(() => stepsOf(subject, steps - 1)).toThrow(overBudget(steps - 1));
  });

  it('takes as many steps for each check of a bulk on the same pair, its walk remembered', async () => {
    const subjects = ['user:zed', 'user:ann', 'user:gil', 'user:zed'];
    const queries = subjects.map((subject) => grant(subject, 'viewer', 'doc:c'));
    expect(await index().checkAll(schema, queries, 7)).toEqual([overBudget(7), true, overBudget(7), overBudget(7)]);
    expect(await index().checkAll(schema, queries, 17)).toEqual([false, true, overBudget(17), false]);
    expect(await index().checkAll(schema, queries, 18)).toEqual([false, true, false, false]);
  });
});

describe('the steps of a check with rules', () => {
  /** docs/model.md's worked example. */
  const schema = new CompiledSchema([
    { name: 'document', relations: RULED_DOCUMENT_RELATIONS },
    { name: 'org', relations: { member: {} } },
    { name: 'user', relations: null },
  ]);
  const index = new GrantIndex();
  // d1's parent is not asked: editor, viewer's first include, holds.
  const grants = [
    grant('user:ann', 'owner', 'document:d1'),
    grant('org:acme', 'org', 'document:d1'),
    grant('user:ann', 'member', 'org:acme'),
    grant('document:p', 'parent', 'document:d1'),
  ];
  for (const g of grants) index.add(g);
  const check = async (budget: number) =>
    (await new IndexChecker(budget).check({ index, agents: new Map() }, schema, [grant('user:ann', 'viewer', 'document:d1')])).answers[0];

  it('charges each part evaluated once, its walks and the objects its arrows lead to, all against one budget', async () => {
    // Each part 1, and each walk ann's one group and the pairs it expands: viewer 1 + (1 + 1); editor 1 + 1
    // (held on the first level); blocked 1 + (1 + 1); org->member 1 object, and member on it 1; blocked again remembered.
    expect(await check(10)).toBe(true);
    expect(await check(9)).toEqual(overBudget(9));
  });
});
