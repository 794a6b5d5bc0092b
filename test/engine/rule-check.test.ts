import { describe, expect, it } from 'vitest';
import { DEFAULT_CHECK_BUDGET } from '../../src/engine/budget.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { IndexChecker, indexRuleGraph } from '../../src/engine/index-checker.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { RuleDecision } from '../../src/engine/rule-check.ts';
import { CompiledSchema, type RelationDefinitions } from '../../src/engine/schema.ts';
import { RULED_DOCUMENT_RELATIONS, SpentSlice } from './fixtures.ts';

/** The rule evaluator over an index (docs/model.md#requires-and-excludes), on the model of docs/model.md's worked example (RULED_DOCUMENT_RELATIONS). */
function tenant(
  grants: string[],
  relations: RelationDefinitions = RULED_DOCUMENT_RELATIONS,
  agents = new Map<string, string[]>(),
  budget = DEFAULT_CHECK_BUDGET,
) {
  const index = new GrantIndex();
  for (const line of grants) {
    const [subject, relation, object] = line.split(' ') as [string, string, string];
    index.add({ subject: parseRef(subject, 'subject'), relation, object: parseRef(object, 'object') });
  }
  const schema = new CompiledSchema([
    { name: 'document', relations },
    { name: 'org', relations: { member: {} } },
    { name: 'team', relations: { member: {} } },
    { name: 'user', relations: null },
    { name: 'agent', relations: null },
  ]);
  const checker = new IndexChecker(budget);
  const check = async (subject: string, relation: string, object: string) => {
    const query = { subject: parseRef(subject, 'subject'), relation, object: parseRef(object, 'object') };
    const [answer] = (await checker.check({ index, agents }, schema, [query])).answers;
    return answer;
  };
  return { index, schema, checker, check };
}

describe('requires and excludes', () => {
  it('excludes a subject who holds the excluded relation, directly or through a group', async () => {
    const { check } = tenant([
      'user:ann owner document:d1',
      'user:bob owner document:d1',
      'user:bob blocked document:d1',
      'user:cid member team:t1',
      'team:t1 owner document:d1',
      'user:cid member team:bad',
      'team:bad blocked document:d1',
    ]);
    expect(await check('user:ann', 'editor', 'document:d1')).toBe(true);
    expect(await check('user:bob', 'editor', 'document:d1')).toBe(false);
    expect(await check('user:cid', 'editor', 'document:d1')).toBe(false);
  });

  it('requires every reference, through arrows too', async () => {
    const { check } = tenant(['user:ann owner document:d1', 'org:acme org document:d1', 'user:ann member org:acme', 'user:bob owner document:d1']);
    expect(await check('user:ann', 'viewer', 'document:d1')).toBe(true);
    expect(await check('user:bob', 'viewer', 'document:d1')).toBe(false);
    expect(await check('user:bob', 'editor', 'document:d1')).toBe(true);
  });

  it('follows ruled relations through arrows, each part for the subject as a whole', async () => {
    const { check } = tenant([
      'document:root parent document:d1',
      'user:ann owner document:root',
      'org:acme org document:root',
      'org:acme org document:d1',
      'user:ann member org:acme',
      'user:ann blocked document:d1',
    ]);
    expect(await check('user:ann', 'viewer', 'document:root')).toBe(true);
    expect(await check('user:ann', 'viewer', 'document:d1')).toBe(false);
  });

  it('answers a model without rules as the plain walk does', async () => {
    const { check, schema } = tenant(['user:ann owner document:d1'], { owner: {}, viewer: { includes: ['owner'] } });
    expect(schema.rules.any).toBe(false);
    expect(await check('user:ann', 'viewer', 'document:d1')).toBe(true);
  });
});

describe('public grants', () => {
  it('gives every subject of the namespace what its * holds, and not other namespaces', async () => {
    const { check } = tenant(['user:* owner document:pub', 'user:ann blocked document:pub']);
    expect(await check('user:nobody', 'editor', 'document:pub')).toBe(true);
    expect(await check('user:*', 'editor', 'document:pub')).toBe(true);
    expect(await check('user:ann', 'editor', 'document:pub')).toBe(false);
    expect(await check('team:t1', 'editor', 'document:pub')).toBe(false);
  });

  it("makes every subject a member of a group, but a group's * reaches no member", async () => {
    const { check } = tenant(['user:* member team:all', 'team:all owner document:d1', 'team:* owner document:d2', 'user:ann member team:t1']);
    expect(await check('user:zed', 'owner', 'document:d1')).toBe(true);
    expect(await check('team:t1', 'owner', 'document:d2')).toBe(true);
    expect(await check('user:ann', 'owner', 'document:d2')).toBe(false);
  });

  it('passes agents reached by agent:* through their scope', async () => {
    const agents = new Map([
      ['a1', ['document:owner']],
      ['a2', ['document:viewer']],
    ]);
    const { check } = tenant(['agent:* owner document:d1'], RULED_DOCUMENT_RELATIONS, agents);
    expect(await check('agent:a1', 'owner', 'document:d1')).toBe(true);
    expect(await check('agent:a2', 'owner', 'document:d1')).toBe(false);
    expect(await check('agent:a3', 'owner', 'document:d1')).toBe(false);
  });
});

// Budgets of a hundredth of the default, and grants to match: each test runs again for every mutant it covers (npm run mutate).
describe('the work budget', () => {
  it('refuses an exclusion it cannot decide within the budget', async () => {
    const grants = Array.from({ length: 300 }, (_, i) => `document:p${i} parent document:d1`);
    const { check } = tenant(
      [...grants, 'user:ann owner document:d1', 'org:acme org document:d1', 'user:ann member org:acme'],
      { ...RULED_DOCUMENT_RELATIONS, blocked: { includes: ['parent->blocked'] } },
      new Map(),
      250,
    );
    const answer = await check('user:ann', 'editor', 'document:d1');
    expect(answer).toMatchObject({ type: 'check-too-complex' });
  });

  it("names the check's budget when a part's walk passes what was left of it, in a check and in its explanation", async () => {
    const grants = Array.from({ length: 80 }, (_, i) => [`document:p${i} parent document:d1`, `document:root parent document:p${i}`]).flat();
    const { index, schema, checker, check } = tenant(
      [...grants, 'user:ann owner document:d1'],
      { ...RULED_DOCUMENT_RELATIONS, blocked: { includes: ['parent->blocked'] }, editor: { includes: ['owner'], excludes: ['parent->blocked'] } },
      new Map(),
      250,
    );
    const budget = /^the check would take more than 250 steps /;
    expect(await check('user:ann', 'editor', 'document:d1')).toMatchObject({ type: 'check-too-complex', detail: expect.stringMatching(budget) });
    const query = { subject: parseRef('user:ann', 'subject'), relation: 'editor', object: parseRef('document:d1', 'object') };
    await expect(checker.explain({ index, agents: new Map() }, schema, query, Date.now())).rejects.toMatchObject({
      type: 'check-too-complex',
      detail: expect.stringMatching(budget),
    });
  });
});

describe('giving way between reads (docs/decisions.md#one-meter-for-all-work-in-memory)', () => {
  /** viewer excludes editor on each of 20 parents, and editor has rules of its own: a read or more a parent. */
  const MANY_PARENTS: RelationDefinitions = { ...RULED_DOCUMENT_RELATIONS, viewer: { includes: ['owner'], excludes: ['parent->editor'] } };
  const parents = Array.from({ length: 20 }, (_, i) => `document:p${i} parent document:d1`);
  const ann = { subject: parseRef('user:ann', 'subject'), relation: 'viewer', object: parseRef('document:d1', 'object') };

  it('goes on from where it stopped, to the answer a run to the end gives', () => {
    const { index, schema } = tenant([...parents, 'user:ann owner document:d1', 'user:ann owner document:p7'], MANY_PARENTS);
    const whole = new RuleDecision(indexRuleGraph(index, schema), schema, ann, 25_000).run();
    const stepwise = new RuleDecision(indexRuleGraph(index, schema), schema, ann, 25_000);
    let runs = 1;
    let answer = stepwise.run(() => true);
    for (; answer === undefined; runs++) answer = stepwise.run(() => true);
    expect(whole).toBe(false);
    expect(answer).toBe(whole);
    // A read or more a parent up to p7, which ann edits: excluded there.
    expect(runs).toBeGreaterThan(7);
  });

  it('stops between parts of one read of many objects, to the same answer', () => {
    // `parent->blocked` is plain: one read walks every parent (100 of them), each up to its root.
    const relations: RelationDefinitions = {
      ...RULED_DOCUMENT_RELATIONS,
      blocked: { includes: ['parent->blocked'] },
      open: { includes: ['owner'], excludes: ['parent->blocked'] },
    };
    const grants = Array.from({ length: 100 }, (_, i) => [`document:p${i} parent document:d1`, `document:root parent document:p${i}`]).flat();
    for (const blockedAtRoot of [false, true]) {
      const { index, schema } = tenant(
        [...grants, 'user:ann owner document:d1', ...(blockedAtRoot ? ['user:ann blocked document:root'] : [])],
        relations,
      );
      const query = { ...ann, relation: 'open' };
      const whole = new RuleDecision(indexRuleGraph(index, schema), schema, query, 25_000).run();
      const stepwise = new RuleDecision(indexRuleGraph(index, schema), schema, query, 25_000);
      let runs = 1;
      let answer = stepwise.run(() => true);
      for (; answer === undefined; runs++) answer = stepwise.run(() => true);
      expect(whole).toBe(!blockedAtRoot);
      expect(answer).toBe(whole);
      // Blocked at the root, the first parent's walk decides; else all 100 parents are walked, 16 at a time.
      expect(runs).toBeGreaterThanOrEqual(blockedAtRoot ? 1 : 7);
    }
  });

  it('pauses a ruled check in memory between its reads when its slice is spent', async () => {
    const { index, schema } = tenant([...parents, 'user:ann owner document:d1'], MANY_PARENTS);
    const slice = new SpentSlice();
    expect((await new IndexChecker().check({ index, agents: new Map() }, schema, [ann], slice)).answers).toEqual([true]);
    expect(slice.pauses).toBeGreaterThan(20);
  });

  it('counts the steps of its ruled checks, which a listing bounds its pages by', async () => {
    const { index, schema } = tenant([...parents, 'user:ann owner document:d1'], MANY_PARENTS);
    const alone = new RuleDecision(indexRuleGraph(index, schema), schema, ann, 25_000);
    expect(alone.run()).toBe(true);
    expect(alone.steps).toBeGreaterThan(20);
    const plain = { ...ann, relation: 'owner' };
    expect(await new IndexChecker().check({ index, agents: new Map() }, schema, [ann, plain, ann], new SpentSlice())).toEqual({
      answers: [true, true, true],
      ruledSteps: 2 * alone.steps,
    });
  });

  it('starts again, and answers the new state, when the grants change while it gives way', async () => {
    const { index, schema } = tenant([...parents, 'user:ann owner document:d1'], MANY_PARENTS);
    // Its base (ann owns d1) is read before its first pause between reads (the slice's second), and no longer holds after it.
    const slice: SpentSlice = new SpentSlice(() => {
      if (slice.pauses === 2)
        index.remove({ subject: parseRef('user:ann', 'subject'), relation: 'owner', object: parseRef('document:d1', 'object') });
    });
    expect((await new IndexChecker().check({ index, agents: new Map() }, schema, [ann], slice)).answers).toEqual([false]);
  });
});
