import { describe, expect, it } from 'vitest';
import { CHECK_BUDGET } from '../../src/engine/budget.ts';
import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { SqlGraphStore } from '../../src/store/graph.ts';
import { HELD_READ, HOLDERS_READ } from '../../src/store/graph-sql.ts';
import { DomainError } from '../../src/errors.ts';
import { useServices } from '../helpers.ts';
import { DOCUMENT_RELATIONS, tenantGraph } from './fixtures.ts';

/** Checks PostgreSQL answers (no grants in memory): the walk of grantd_check_walk and its budgets. */
const services = useServices({ graphMemory: 0 });

/** An engine over this run's pool whose walks in the database have the given budgets. */
const engineWith = (options: { checkBudget?: number; walkMs?: number }) =>
  new AuthorizationEngine(new SqlGraphStore(services.engine.store['pool' as never], services.schemas, null, options));

/** A namespace `node` whose four relations each include parent->r1..r4, and a complete graph of `n` nodes over `parent`. */
async function denseTenant(n: number) {
  const g = await tenantGraph(services);
  const rels = ['r1', 'r2', 'r3', 'r4'];
  await g.namespace('node', { parent: {}, ...Object.fromEntries(rels.map((r) => [r, { includes: rels.map((t) => `parent->${t}`) }])) });
  const nodes = Array.from({ length: n }, (_, k) => `node:n${k}`);
  await g.grant(...nodes.flatMap((a) => nodes.filter((b) => b !== a).map((b): [string, string, string] => [a, 'parent', b])));
  return g;
}

describe('checks PostgreSQL answers', () => {
  it(`answer exactly for subjects holding more than ${HELD_READ} grants, on pairs with more than ${HOLDERS_READ} holders`, async () => {
    const g = await tenantGraph(services);
    await g.namespace('document', DOCUMENT_RELATIONS);
    await g.namespace('group', { member: {} });
    const many = (count: number, make: (n: number) => [string, string, string]) => Array.from({ length: count }, (_, n) => make(n));
    await g.grant(
      ...many(HOLDERS_READ * 2, (n) => [`user:v${n}`, 'viewer', 'document:d1']),
      ...many(HOLDERS_READ * 2, (n) => [`user:m${n}`, 'member', 'group:org']),
      ['group:org', 'viewer', 'document:d2'],
      ['document:d1', 'parent', 'document:d3'],
    );
    // Busy subjects: each holds more grants than a check reads of them.
    for (const busy of ['user:v99', 'user:m99', 'group:org', 'user:nobody']) {
      await g.grant(...many(HELD_READ + 1, (n): [string, string, string] => [busy, 'owner', `document:x${n}`]));
    }
    const probes = ['user:v0', 'user:v99', 'user:m99', 'user:nobody'];
    const docs = ['d1', 'd2', 'd3', 'x7'];
    const results = await g.bulk(probes.flatMap((subject) => docs.map((d): [string, string, string] => [subject, 'viewer', `document:${d}`])));
    expect(results.map((r) => r.allowed)).toEqual([
      ...[true, false, true, false], // v0: d1, and d3 through its parent d1
      ...[true, false, true, true], // v99 also owns x7
      ...[false, true, false, true], // m99 through group:org, which owns x7
      ...[false, false, false, true],
    ]);
  });

  it('visit each (object, relation) pair once: a complete graph of 40 nodes is 160 pairs, the budget counts no more', async () => {
    const g = await denseTenant(40);
    await g.grant(['user:alice', 'r1', 'node:n0']);
    const check = (engine: AuthorizationEngine, subject: string) => engine.check(g.tenantId, { subject, relation: 'r2', object: 'node:n1' });
    expect(await check(engineWith({ checkBudget: 160 }), 'user:bob')).toBe(false);
    expect(await check(engineWith({ checkBudget: 160 }), 'user:alice')).toBe(true);
    const refused = await check(engineWith({ checkBudget: 159 }), 'user:bob').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({ type: 'check-too-complex', detail: expect.stringContaining('more than 159 (object, relation) pairs') });
    // Allowed at depth 1, with 1 + 156 pairs visited: found before the walk goes on.
    expect(await check(engineWith({ checkBudget: 40 * 4 - 1 }), 'user:alice')).toBe(true);
    expect(CHECK_BUDGET).toBe(100_000);
  });

  it('refuse a check past its budget as that item of a bulk check, and answer the others of its statement', async () => {
    const g = await denseTenant(12);
    await g.namespace('document', DOCUMENT_RELATIONS);
    await g.grant(['user:alice', 'owner', 'document:d1'], ['user:alice', 'r1', 'node:n3']);
    const results = await engineWith({ checkBudget: 20 }).checkBulk(g.tenantId, [
      { subject: 'user:alice', relation: 'viewer', object: 'document:d1' },
      { subject: 'user:bob', relation: 'r1', object: 'node:n0' },
      { subject: 'user:alice', relation: 'r4', object: 'node:n0' },
      { subject: 'user:alice', relation: 'r1', object: 'node:n3' },
      { subject: 'user:alice', relation: 'editor', object: 'document:d2' },
    ]);
    expect(results).toEqual([
      { allowed: true },
      { allowed: false, error: { type: 'check-too-complex', detail: expect.stringContaining('more than 20 (object, relation) pairs') } },
      // 1 pair, then 44 at depth 1: refused before the holder at depth 1 is looked for, as in memory.
      { allowed: false, error: { type: 'check-too-complex', detail: expect.stringContaining('more than 20') } },
      { allowed: true },
      { allowed: false },
    ]);
  });

  it('stop a check still walking past its time budget at the next depth, and answer the checks done before', async () => {
    const g = await denseTenant(5);
    await g.grant(['user:alice', 'r1', 'node:n0']);
    const results = await engineWith({ walkMs: 0 }).checkBulk(g.tenantId, [
      { subject: 'user:alice', relation: 'r1', object: 'node:n0' },
      { subject: 'user:alice', relation: 'r1', object: 'node:n1' },
    ]);
    expect(results).toEqual([
      { allowed: true },
      { allowed: false, error: { type: 'check-too-complex', detail: expect.stringContaining('time budget of 0 s') } },
    ]);
  });
});
