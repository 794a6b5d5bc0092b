import { describe, expect, it } from 'vitest';
import { DEFAULT_CHECK_BUDGET } from '../../src/engine/budget.ts';
import type { CheckAnswer } from '../../src/engine/checker.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { IndexChecker, indexRuleGraph } from '../../src/engine/index-checker.ts';
import { decideRules, type RuleGraph } from '../../src/engine/rule-check.ts';
import type { Triple } from '../../src/engine/refs.ts';
import { CompiledSchema, type NamespaceDefinition } from '../../src/engine/schema.ts';
import { masksAdmit } from '../../src/engine/scope.ts';
import { WorkMeter } from '../../src/engine/work-meter.ts';
import { grant } from './fixtures.ts';
import { RULE_CASES, type RuleCase } from './rule-cases.ts';

/**
 * The cases worked by hand (rule-cases.ts) through the index alone, with no database, so that
 * `npm run mutate` runs them against the rule evaluator, the index's walks and explain
 * (docs/decisions.md#mutation-testing); rule-cases.test.ts runs them through both engines and the app.
 */
function tenantOf({ definitions, grants, scopes = {} }: RuleCase) {
  const namespaces: NamespaceDefinition[] = Object.entries(definitions).map(([name, relations]) => ({ name, relations }));
  // Namespaces the reference reads as open (groups, organisations), as rule-cases.test.ts declares them.
  for (const [, , object] of grants) {
    const name = object.slice(0, object.indexOf(':'));
    if (!namespaces.some((ns) => ns.name === name)) namespaces.push({ name, relations: null });
  }
  const index = new GrantIndex();
  for (const [subject, relation, object] of grants) index.add(grant(subject, relation, object));
  return { tenant: { index, agents: new Map(Object.entries(scopes)) }, schema: new CompiledSchema(namespaces) };
}

const answerOf = (answer: CheckAnswer | undefined) =>
  typeof answer === 'boolean' || answer === undefined ? answer : answer.type === 'check-too-complex' ? 'too-complex' : answer.type;

describe('the cases worked by hand, in an index', () => {
  it.each(RULE_CASES)('$name', async (ruleCase) => {
    const { tenant, schema } = tenantOf(ruleCase);
    const checker = new IndexChecker();
    const queries = ruleCase.checks.map(([[subject, relation, object]]) => grant(subject, relation, object));
    const want = ruleCase.checks.map(([query, answer]) => [query.join(' '), answer]);
    const named = (answers: unknown[]) => ruleCase.checks.map(([query], i) => [query.join(' '), answers[i]]);
    // In a bulk, each alone, each alone with no promise, and in a bulk giving way at every checkpoint.
    expect(named((await checker.check(tenant, schema, queries)).answers.map(answerOf))).toEqual(want);
    expect(named(await Promise.all(queries.map(async (q) => answerOf((await checker.check(tenant, schema, [q])).answers[0]))))).toEqual(want);
    // checkOne leaves a ruled check that takes longer than a slice to `check` (undefined): on a busy machine, any.
    const atOnce = queries.map((q, i) => answerOf(checker.checkOne(tenant, schema, q)) ?? want[i]![1]);
    expect(named(atOnce)).toEqual(want);
    expect(named((await checker.check(tenant, schema, queries, WorkMeter.unmetered(0))).answers.map(answerOf))).toEqual(want);
    // What the check refuses, the engine refuses before explaining (AuthorizationEngine.explain): explain's walks do not tell.
    const explained = await Promise.all(
      queries.map(async (q, i) =>
        want[i]![1] === 'too-complex'
          ? 'too-complex'
          : checker.explain(tenant, schema, q, Date.now()).then(
              (explanation) => explanation.allowed,
              (error: Error & { type?: string }) => (error.type === 'check-too-complex' ? 'too-complex' : error.message),
            ),
      ),
    );
    expect(named(explained)).toEqual(want);
    // The evaluator whose reads await, as PostgreSQL's do (sql-checker.ts), over the index's reads; the caller applies the mask.
    const sync = indexRuleGraph(tenant.index, schema);
    const graph: RuleGraph = { plain: async (...read) => sync.plain(...read), related: async (...read) => sync.related(...read) };
    const admits = (q: Triple) => masksAdmit(q.subject, q.object.ns, q.relation, (id) => tenant.agents.get(id));
    const decided = await Promise.all(
      queries.map(async (q) => answerOf(admits(q) && (await decideRules(graph, schema, q, DEFAULT_CHECK_BUDGET)).answer)),
    );
    expect(named(decided)).toEqual(want);
  });
});
