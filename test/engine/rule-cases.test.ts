import { describe, expect, it } from 'vitest';
import { useServices } from '../helpers.ts';
import { RULE_CASES } from './rule-cases.ts';
import { tenantGraph } from './tenant-graph.ts';

/**
 * The cases worked by hand (rule-cases.ts) through both engines, in memory and by PostgreSQL: each
 * check in a bulk, alone and explained, a reference that 16 arrows do not decide refused as
 * check-too-complex (docs/model.md#model-limits).
 */
const inMemory = useServices();
const databaseOnly = useServices({ graphMemory: 0 });

describe.each([
  ['in memory', inMemory],
  ['in PostgreSQL', databaseOnly],
])('the cases worked by hand, %s', (_, services) => {
  it.each(RULE_CASES)('$name', async ({ definitions, grants, scopes = {}, checks }) => {
    const g = await tenantGraph(services);
    for (const [name, relations] of Object.entries(definitions)) await g.namespace(name, relations);
    // Namespaces the reference reads as open (groups, organisations): declared so, if a new tenant has not.
    const objectNamespaces = new Set(grants.map(([, , object]) => object.slice(0, object.indexOf(':'))));
    for (const name of objectNamespaces) {
      if (name in definitions) continue;
      await g.namespace(name, null).catch((error: { type?: string }) => {
        if (error.type !== 'namespace-exists') throw error;
      });
    }
    for (const [agent, scope] of Object.entries(scopes)) await g.agent(agent, scope);
    await g.grant(...grants);
    const want = checks.map(([query, answer]) => [query.join(' '), answer]);
    const bulk = await g.bulk(checks.map(([query]) => query));
    expect(checks.map(([query], i) => [query.join(' '), bulk[i]!.error?.type === 'check-too-complex' ? 'too-complex' : bulk[i]!.allowed])).toEqual(
      want,
    );
    const single = await Promise.all(checks.map(([query]) => answerOf(query, () => g.check(...query))));
    expect(single).toEqual(want);
    const explained = await Promise.all(checks.map(([query]) => answerOf(query, async () => (await g.explain(...query)).allowed)));
    expect(explained).toEqual(want);
  });
});

/** A query and its answer as the cases write it: allowed, or 'too-complex' when refused as such. */
async function answerOf(query: readonly string[], ask: () => Promise<boolean>): Promise<[string, boolean | string]> {
  try {
    return [query.join(' '), await ask()];
  } catch (error) {
    return [query.join(' '), (error as { type?: string }).type === 'check-too-complex' ? 'too-complex' : String(error)];
  }
}
