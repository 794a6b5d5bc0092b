import { describe, expect, it } from 'vitest';
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
    return new IndexChecker().check({ index, agents: new Map() }, schema, [grant(subject, 'a', 'folder:f17')]).then(([first]) => first);
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
