import { describe, expect, it } from 'vitest';
import { overBudget } from '../../src/engine/budget.ts';
import type { CheckAnswer } from '../../src/engine/checker.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { IndexChecker } from '../../src/engine/index-checker.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { grant } from './fixtures.ts';

/**
 * A part of a ruled check asked both ways in one check (docs/model.md#model-limits): under an include,
 * what lies past 16 arrows is not held; under `requires`, it must be decided, or the check is refused.
 * The evaluator remembers each part's value by whether it was asked to decide.
 */
describe('a part asked under an include and under requires in one check', () => {
  // c is held through a chain of parents (ruled: it excludes blocked); a includes x (which includes c) and y, and requires c.
  const schema = new CompiledSchema([
    {
      name: 'folder',
      relations: {
        parent: {},
        owner: {},
        blocked: {},
        c: { includes: ['parent->c'], excludes: ['blocked'] },
        x: { includes: ['c'] },
        y: { includes: ['owner'], excludes: ['blocked'] },
        a: { includes: ['x', 'y'], requires: ['c'] },
      },
    },
    { name: 'user', relations: null },
  ]);

  /**
   * folder:f17 and its parents down to folder:f<first> (f<k> the parent of f<k+1>); u holds c on
   * f<first> and owns f17, w only owns f17, v holds nothing there.
   */
  function answer(first: number, subject: string): Promise<CheckAnswer | undefined> {
    const index = new GrantIndex();
    for (let k = first; k < 17; k++) index.add(grant(`folder:f${k}`, 'parent', `folder:f${k + 1}`));
    index.add(grant('user:u', 'c', `folder:f${first}`));
    index.add(grant('user:u', 'owner', 'folder:f17'));
    index.add(grant('user:w', 'owner', 'folder:f17'));
    index.add(grant('user:v', 'owner', 'folder:elsewhere'));
    return new IndexChecker().check({ index, agents: new Map() }, schema, [grant(subject, 'a', 'folder:f17')]).then(({ answers: [first] }) => first);
  }
  /** The answer, or the type of its problem. */
  const check = async (first: number, subject: string) => {
    const given = await answer(first, subject);
    return typeof given === 'boolean' ? given : given?.type;
  };

  it('refuses the requirement that 17 arrows would decide, though the include past 16 found it not held', async () => {
    expect(await answer(0, 'user:u')).toMatchObject({
      type: 'check-too-complex',
      detail:
        'deciding c on folder:f17 would follow more than 16 arrows in one chain from the checked object, the most a check follows; shorten the chain or the rule',
    });
  });

  it('decides a requirement whose chain ends within 16 arrows', async () => {
    expect(await check(1, 'user:u')).toBe(true);
  });

  it('denies a requirement held nowhere along a chain that ends within 16 arrows, and refuses it along one that does not', async () => {
    expect(await check(1, 'user:w')).toBe(false);
    expect(await check(0, 'user:w')).toBe('check-too-complex');
  });

  it('denies, without asking the requirement, a subject whose includes past 16 arrows hold nothing', async () => {
    expect(await check(0, 'user:v')).toBe(false);
    expect(await check(1, 'user:v')).toBe(false);
  });
});

describe('an arrow of a ruled check to several objects', () => {
  const schema = new CompiledSchema([
    {
      name: 'document',
      relations: {
        parent: {},
        owner: {},
        org: {},
        blocked: { includes: ['parent->blocked'] },
        viewer: { includes: ['owner'], requires: ['org->member'], excludes: ['parent->blocked'] },
      },
    },
    { name: 'org', relations: { member: {} } },
    { name: 'user', relations: null },
  ]);
  const check = async (grants: [string, string, string][], object: string, budget?: number) => {
    const index = new GrantIndex();
    for (const [subject, relation, on] of grants) index.add(grant(subject, relation, on));
    const {
      answers: [answer],
    } = await new IndexChecker(budget).check({ index, agents: new Map() }, schema, [grant('user:ann', 'viewer', object)]);
    return answer;
  };
  const owned = (object: string, ...orgs: string[]): [string, string, string][] => [
    ['user:ann', 'owner', object],
    ...orgs.map((org): [string, string, string] => [org, 'org', object]),
  ];

  it('holds a requirement one of its objects meets, in whichever order they come', async () => {
    const grants: [string, string, string][] = [
      ...owned('document:d1', 'org:acme', 'org:beta'),
      ...owned('document:d2', 'org:beta', 'org:acme'),
      ['user:ann', 'member', 'org:acme'],
    ];
    expect([await check(grants, 'document:d1'), await check(grants, 'document:d2')]).toEqual([true, true]);
  });

  it('refuses an exclusion that one object leaves undecided, whichever comes first', async () => {
    // document:f16 is 16 parents from document:f0: blocked on it, 1 arrow from the checked object, is not decided.
    const chain = Array.from({ length: 16 }, (_, k): [string, string, string] => [`document:f${k}`, 'parent', `document:f${k + 1}`]);
    const grants: [string, string, string][] = [...chain, ['user:ann', 'member', 'org:acme']];
    for (const [object, parents] of [
      ['document:d1', ['document:f16', 'document:g']],
      ['document:d2', ['document:g', 'document:f16']],
    ] as const) {
      grants.push(...owned(object, 'org:acme'), ...parents.map((parent): [string, string, string] => [parent, 'parent', object]));
    }
    expect([await check(grants, 'document:d1'), await check(grants, 'document:d2')]).toMatchObject([
      { type: 'check-too-complex' },
      { type: 'check-too-complex' },
    ]);
  });

  it('refuses, within the budget, an arrow to more objects than the budget has left', async () => {
    const parents = Array.from({ length: 30 }, (_, i): [string, string, string] => [`document:p${i}`, 'parent', 'document:d1']);
    expect(await check([...owned('document:d1', 'org:acme'), ['user:ann', 'member', 'org:acme'], ...parents], 'document:d1', 20)).toEqual(
      overBudget(20),
    );
  });
});
