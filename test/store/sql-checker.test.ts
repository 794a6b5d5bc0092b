import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { createServices } from '../../src/runtime.ts';
import { createKey } from '../../src/store/keys.ts';
import type { HeldTenants } from '../../src/store/held-tenants.ts';
import { CheckRouter } from '../../src/store/check-router.ts';
import { openGraphPool, type GraphStatementOptions } from '../../src/store/graph-statements.ts';
import { CHECK_SQL, HELD_READ, HOLDERS_READ } from '../../src/store/graph-sql.ts';
import { createGrant } from '../../src/store/grants.ts';
import { GraphStatements } from '../../src/store/graph-statements.ts';
import { SqlChecker } from '../../src/store/sql-checker.ts';
import { SqlListings } from '../../src/store/sql-listings.ts';
import { MAX_ARROW_DEPTH } from '../../src/engine/schema-tables.ts';
import type { WallClock } from '../../src/engine/grant-window.ts';
import { databaseUrl, useServices } from '../helpers.ts';
import { DOCUMENT_RELATIONS } from '../engine/fixtures.ts';
import { tenantGraph } from '../engine/tenant-graph.ts';

/** Checks PostgreSQL answers (no grants in memory): the walk of grantd_check_walk and its budgets. */
const services = useServices({ graphMemory: 0 });
/** The same database with grants held in memory, to compare the two walks. */
const memory = useServices();

/** This file's connections, which it tells from others' in pg_stat_activity by their application name. */
const POOL_NAME = `grantd sql-checker ${process.pid}`;
const namedUrl = `${databaseUrl()}${databaseUrl().includes('?') ? '&' : '?'}application_name=${encodeURIComponent(POOL_NAME)}`;
/** A graph statements' pool of 4 connections. */
const graphPool = openGraphPool(namedUrl, 4, () => undefined);
afterAll(() => graphPool.end());

/** An engine over that pool (or another) whose walks and statements in the database have the given budgets. */
const engineWith = (options: { checkBudget?: number; walkMs?: number } & GraphStatementOptions, pool = graphPool) =>
  new AuthorizationEngine(new CheckRouter(pool, services.schemas, null, options));

/** A namespace `node` whose four relations each include parent->r1..r4, and a complete graph of `n` nodes over `parent`. */
async function denseTenant(n: number) {
  const g = await tenantGraph(services);
  const rels = ['r1', 'r2', 'r3', 'r4'];
  await g.namespace('node', { parent: {}, ...Object.fromEntries(rels.map((r) => [r, { includes: rels.map((t) => `parent->${t}`) }])) });
  const nodes = Array.from({ length: n }, (_, k) => `node:n${k}`);
  await g.grant(...nodes.flatMap((a) => nodes.filter((b) => b !== a).map((b): [string, string, string] => [a, 'parent', b])));
  return g;
}

/**
 * What one CHECK_SQL statement of `checks` ([subject, relation, object]) read of the grants' primary
 * key (by object): index scans and entries, counted by PostgreSQL for the statement's transaction.
 */
async function readsOfCheck(tenantId: string, checks: [string, string, string][], budget: number, index = 'grants_pkey') {
  const schema = await services.schemas.get(tenantId, { maxAgeMs: 0 });
  const items = checks.map(([subject, rel, object], i) => {
    const [s, o] = [parseRef(subject, 'subject'), parseRef(object, 'object')];
    return { i, sns: s.ns, sid: s.id, ons: o.ns, oid: o.id, rel };
  });
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ outcome: string | null }>(CHECK_SQL, [
      tenantId,
      JSON.stringify(items),
      schema.closureJson,
      schema.arrowsJson,
      budget,
      10_000,
      new Date(),
      MAX_ARROW_DEPTH,
      false,
    ]);
    const { rows: reads } = await client.query<{ scans: string; entries: string }>(
      `SELECT pg_stat_get_xact_numscans($1::regclass) AS scans, pg_stat_get_xact_tuples_returned($1::regclass) AS entries`,
      [index],
    );
    await client.query('ROLLBACK');
    return { outcomes: rows.map((r) => r.outcome ?? 'denied'), scans: Number(reads[0]!.scans), entries: Number(reads[0]!.entries) };
  } finally {
    await client.end();
  }
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

  it('visit each (object, relation) pair once, and count steps exactly as the walk in memory does', async () => {
    const g = await denseTenant(40);
    await g.grant(['user:alice', 'r1', 'node:n0'], ['user:bob', 'r1', 'user:elsewhere']);
    const query = (subject: string) => ({ subject: parseRef(subject, 'subject'), relation: 'r2', object: parseRef('node:n1', 'object') });
    const inDatabase = (subject: string, checkBudget: number) =>
      engineWith({ checkBudget })
        .check(g.tenantId, { subject, relation: 'r2', object: 'node:n1' })
        .catch((error: unknown) => error);
    const inMemory = async (subject: string, checkBudget: number) => {
      expect(await memory.heldTenants.load(g.tenantId)).toBe(true);
      const held = (await memory.heldTenants.current(g.tenantId))!;
      const schema = await memory.schemas.get(g.tenantId, { maxAgeMs: 0 });
      try {
        return held.index.check(schema, query(subject), checkBudget);
      } catch (error) {
        return error;
      }
    };
    // bob is denied after 6,400 steps: 1 pair and its 39 parents; 156 pairs (39 nodes x 4 relations) and 39
    // parents each; 3 more pairs of n1 and their parents; nothing new after that. alice is found at depth 1.
    for (const [subject, needed] of [
      ['user:bob', 6_400],
      ['user:alice', 40],
    ] as const) {
      for (const budget of [1, needed - 1, needed, needed + 1]) {
        const [database, held] = [await inDatabase(subject, budget), await inMemory(subject, budget)];
        // Within the budget the answer; past it, the problem naming the budget.
        const outcome =
          typeof database === 'boolean'
            ? database
            : {
                type: (database as { type: string }).type,
                namesBudget: (database as { detail: string }).detail.includes(`more than ${budget} steps`),
              };
        expect(outcome).toEqual(budget < needed ? { type: 'check-too-complex', namesBudget: true } : subject === 'user:alice');
        expect(held).toEqual(database);
      }
    }
  });

  it('explain: count the steps a check counts, in the database and in memory, and refuse past the same budget', async () => {
    const g = await denseTenant(40);
    await g.grant(['user:alice', 'r1', 'node:n0'], ['user:bob', 'r1', 'user:elsewhere']);
    expect(await memory.heldTenants.load(g.tenantId)).toBe(true);
    const explain = (subject: string, checkBudget: number, held: HeldTenants | null) =>
      new AuthorizationEngine(new CheckRouter(graphPool, services.schemas, held, { checkBudget }))
        .explain(g.tenantId, { subject, relation: 'r2', object: 'node:n1' })
        .catch((error: unknown) => error);
    // The budgets of the test above: bob is denied after 6,400 steps, alice found at depth 1 after 40.
    for (const [subject, needed, answer] of [
      ['user:bob', 6_400, { allowed: false, path: [], reason: 'no-path' }],
      [
        'user:alice',
        40,
        {
          allowed: true,
          path: [
            { subject: 'user:alice', relation: 'r1', object: 'node:n0' },
            { subject: 'node:n0', relation: 'parent', object: 'node:n1' },
          ],
          reason: null,
        },
      ],
    ] as const) {
      for (const held of [null, memory.heldTenants]) {
        expect(await explain(subject, needed - 1, held)).toMatchObject({ type: 'check-too-complex' });
        expect(await explain(subject, needed, held)).toMatchObject(answer);
      }
    }
  });

  it('stop reading a level once its grants take a check past its budget', async () => {
    const g = await denseTenant(40);
    await g.grant(['user:bob', 'r1', 'user:elsewhere']);
    // 196 steps to depth 1 (1 pair, its 39 parents, 156 pairs); then 39 parents for each of 156 pairs
    // (4 pairs a parent read), where 804 steps are left: 202 grants read show the check is past them.
    const { outcomes, entries } = await readsOfCheck(g.tenantId, [['user:bob', 'r2', 'node:n1']], 1_000);
    expect(outcomes).toEqual(['too-many-steps']);
    expect(entries).toBe(39 + Math.floor(804 / 4) + 1);
  });

  it(`read what a busy subject holds once its walk reaches more pairs than that, rather than each pair's holders`, async () => {
    const g = await tenantGraph(services);
    await g.namespace('node', { parent: {}, r1: { includes: ['parent->r1'] } });
    await g.namespace('document', DOCUMENT_RELATIONS);
    // node:top has 400 parents: its r1 is held by whoever holds r1 on one of them.
    await g.grant(...Array.from({ length: 400 }, (_, n): [string, string, string] => [`node:p${n}`, 'parent', 'node:top']));
    for (const busy of ['user:busy', 'user:idle']) {
      await g.grant(...Array.from({ length: HELD_READ + 1 }, (_, n): [string, string, string] => [busy, 'owner', `document:x${n}`]));
    }
    await g.grant(['user:busy', 'r1', 'node:p399']);
    const checksOf = (object: string): [string, string, string][] => [
      ['user:busy', 'r1', object],
      ['user:idle', 'r1', object],
    ];
    const { outcomes, scans } = await readsOfCheck(g.tenantId, checksOf('node:top'), 25_000);
    expect(outcomes).toEqual(['allowed', 'denied']);
    // The same checks of an object without parents: what is read before the walk (the subjects' groups,
    // whether `user:*` holds anything, how much each subject holds) and its depth 0, by whatever plan
    // the statistics of the moment choose, the same for both statements.
    const alone = await readsOfCheck(g.tenantId, checksOf('node:alone'), 25_000);
    expect(alone.outcomes).toEqual(['denied', 'denied']);
    // node:top's depth 0 reads as node:alone's (a pair probed for holders, its parents read: its 400 in one
    // scan). Depth 1: its 400 pairs matched against what each subject holds (not 400 probes for holders);
    // idle's then read for parents, one scan a pair.
    expect(scans - alone.scans).toBe(400);
  });

  it(`read the holders of the pairs a check reaches, not every grant of a group holding more than ${HELD_READ}`, async () => {
    const g = await tenantGraph(services);
    await g.namespace('document', DOCUMENT_RELATIONS);
    await g.namespace('group', { member: {} });
    // A team viewing 40 documents: its grants are not read for a check on one of them.
    const held = 40;
    await g.grant(
      ['user:ann', 'member', 'group:team'],
      ...Array.from({ length: held }, (_, n): [string, string, string] => ['group:team', 'viewer', `document:d${n}`]),
    );
    const reads = await readsOfCheck(g.tenantId, [['user:ann', 'viewer', 'document:d7']], 25_000, 'grants_by_subject');
    expect(reads.outcomes).toEqual(['allowed']);
    expect(reads.entries).toBeLessThan(held);
  });

  it('refuse a check past its budget as that item of a bulk check, and answer the others of its statement', async () => {
    const g = await denseTenant(12);
    await g.namespace('document', DOCUMENT_RELATIONS);
    await g.grant(['user:alice', 'owner', 'document:d1'], ['user:alice', 'r1', 'node:n3'], ['user:bob', 'viewer', 'document:d9']);
    const results = await engineWith({ checkBudget: 20 }).checkBulk(g.tenantId, [
      { subject: 'user:alice', relation: 'viewer', object: 'document:d1' },
      { subject: 'user:bob', relation: 'r1', object: 'node:n0' },
      { subject: 'user:alice', relation: 'r4', object: 'node:n0' },
      { subject: 'user:alice', relation: 'r1', object: 'node:n3' },
      { subject: 'user:alice', relation: 'editor', object: 'document:d2' },
    ]);
    expect(results).toEqual([
      { allowed: true },
      { allowed: false, error: { type: 'check-too-complex', detail: expect.stringContaining('more than 20 steps') } },
      // 1 pair and its 11 parents (12 steps), then alice's r1 on n3 is found at depth 1, before that depth is expanded.
      { allowed: true },
      { allowed: true },
      { allowed: false },
    ]);
  });

  it('stop a check still walking past its time budget at the next depth, and refuse its request for now (503), not as too complex', async () => {
    const g = await denseTenant(5);
    await g.grant(['user:alice', 'r1', 'node:n0']);
    const bulk = engineWith({ walkMs: 0 }).checkBulk(g.tenantId, [
      { subject: 'user:alice', relation: 'r1', object: 'node:n0' },
      { subject: 'user:alice', relation: 'r1', object: 'node:n1' },
    ]);
    await expect(bulk).rejects.toMatchObject({ type: 'unavailable', detail: 'a check was still walking after 0 s; retry shortly' });
  });

  it('deny a subject that holds no grant without walking, as in memory, whatever the budget', async () => {
    const g = await denseTenant(12);
    await g.grant(['node:n0', 'r1', 'node:n1']); // user:nobody holds nothing; node:n0 holds r1 on n1
    const check = (subject: string) => engineWith({ checkBudget: 1 }).check(g.tenantId, { subject, relation: 'r2', object: 'node:n3' });
    expect(await check('user:nobody')).toBe(false);
    await expect(check('node:n0')).rejects.toMatchObject({ type: 'check-too-complex' });
  });
});

/** PostgreSQL's answers alone, on the server's clock or `clock`. */
const sqlChecker = (clock?: WallClock) => new SqlChecker(new GraphStatements(graphPool), clock ? { clock } : {});
const sqlListings = () => new SqlListings(new GraphStatements(graphPool));
const triple = (subject: string, relation: string, object: string) => ({
  subject: parseRef(subject, 'subject'),
  relation,
  object: parseRef(object, 'object'),
});

/**
 * Public grants (docs/model.md): `user:*` holds for every user. d1 is viewed by every user, d2 edited
 * by group:all (which every user is a member of), d3 viewed through its parent folder, which every user
 * views; d4 is viewed by every team, not by their members; d5 is ann's alone.
 */
async function publicTenant() {
  const g = await tenantGraph(services);
  await g.namespace('document', DOCUMENT_RELATIONS);
  await g.namespace('folder', { parent: {}, viewer: { includes: ['parent->viewer'] } });
  await g.namespace('group', { member: {} });
  await g.namespace('team', { member: {} });
  await g.grant(
    ['user:*', 'viewer', 'document:d1'],
    ['user:*', 'member', 'group:all'],
    ['group:all', 'editor', 'document:d2'],
    ['user:*', 'viewer', 'folder:f1'],
    ['folder:f1', 'parent', 'document:d3'],
    ['user:ann', 'member', 'team:eng'],
    ['team:*', 'viewer', 'document:d4'],
    ['user:ann', 'owner', 'document:d5'],
  );
  return { ...g, schema: await services.schemas.get(g.tenantId, { maxAgeMs: 0 }) };
}

describe('public grants in PostgreSQL', () => {
  it('hold for every subject of their namespace in checks, through the wildcard, its groups and arrows, and for the wildcard itself', async () => {
    const g = await publicTenant();
    const docs = ['d1', 'd2', 'd3', 'd4', 'd5'];
    const answers = async (subject: string) =>
      (
        await sqlChecker().check(
          g.tenantId,
          g.schema,
          docs.map((d) => triple(subject, 'viewer', `document:${d}`)),
        )
      ).answers;
    // nobody is named in no grant; ann does not receive team:*'s grant (groups stay one level).
    expect(await answers('user:nobody')).toEqual([true, true, true, false, false]);
    expect(await answers('user:ann')).toEqual([true, true, true, false, true]);
    expect(await answers('user:*')).toEqual([true, true, true, false, false]);
    expect(await answers('team:eng')).toEqual([false, false, false, true, false]);
    expect(await answers('group:other')).toEqual([false, false, false, false, false]);
  });

  it('confer only while in force', async () => {
    const T = Date.UTC(2030, 0, 1);
    const g = await publicTenant();
    await createGrant(services.db, g.tenantId, { ...triple('user:*', 'owner', 'document:d6'), window: { notBefore: T + 1000, expiresAt: T + 2000 } });
    const at = (ms: number) => sqlChecker({ now: () => T + ms });
    const viewer = [triple('user:nobody', 'viewer', 'document:d6')];
    expect((await at(500).check(g.tenantId, g.schema, viewer)).answers).toEqual([false]);
    expect((await at(1500).check(g.tenantId, g.schema, viewer)).answers).toEqual([true]);
    expect((await at(2500).check(g.tenantId, g.schema, viewer)).answers).toEqual([false]);
  });

  it('make a subject named in no grant walk once its namespace has a wildcard granted, and not before', async () => {
    const g = await denseTenant(12);
    await g.grant(['node:n0', 'r1', 'node:n1']);
    const check = (subject: string) => engineWith({ checkBudget: 1 }).check(g.tenantId, { subject, relation: 'r2', object: 'node:n3' });
    expect(await check('user:nobody')).toBe(false);
    await g.grant(['user:*', 'r1', 'node:elsewhere']);
    await expect(check('user:nobody')).rejects.toMatchObject({ type: 'check-too-complex' });
  });

  it("list every object the wildcard reaches among a subject's objects, and the wildcard's own", async () => {
    const g = await publicTenant();
    const reachable = (subject: string, namespace = 'document') =>
      sqlListings().reachable(g.tenantId, g.schema, {
        subject: parseRef(subject, 'subject'),
        namespace,
        relation: 'viewer',
        after: null,
        limit: 100,
        budget: 1000,
      });
    expect(await reachable('user:nobody')).toEqual(['d1', 'd2', 'd3']);
    expect(await reachable('user:ann')).toEqual(['d1', 'd2', 'd3', 'd5']);
    expect(await reachable('user:*')).toEqual(['d1', 'd2', 'd3']);
    expect(await reachable('user:nobody', 'folder')).toEqual(['f1']);
    expect(await reachable('team:eng')).toEqual(['d4']);
  });

  it("leave the subjects of an object to be checked one by one (null) when the namespace's wildcard holds, itself or as a member of a holder", async () => {
    const g = await publicTenant();
    const holders = (object: string, namespace = 'user') =>
      sqlListings().holders(g.tenantId, g.schema, {
        object: parseRef(object, 'object'),
        relation: 'viewer',
        namespace,
        after: null,
        limit: 100,
        budget: 1000,
      });
    expect(await holders('document:d1')).toBeNull();
    expect(await holders('document:d2')).toBeNull();
    expect(await holders('document:d3')).toBeNull();
    expect(await holders('document:d5')).toEqual(['ann']);
    // team:* holds d4: teams are listed one by one; users are not reached.
    expect(await holders('document:d4', 'team')).toBeNull();
    expect(await holders('document:d4')).toEqual([]);
    expect(await holders('document:d1', 'team')).toEqual([]);
  });
});

describe("a rule's parts in PostgreSQL", () => {
  it("plainCheck: walk by the grants alone, whatever an agent's scope, following at most the arrows asked, batched with the checks of the turn", async () => {
    const g = await publicTenant();
    // Registered agents whose scopes cover no relation of documents.
    await g.agent('bot', ['folder:viewer']);
    await g.agent('unscoped', ['folder:*']);
    await g.grant(['agent:bot', 'viewer', 'folder:f2'], ['folder:f2', 'parent', 'document:d7'], ['agent:unscoped', 'owner', 'document:d8']);
    const checker = sqlChecker();
    const queries = [
      triple('agent:bot', 'viewer', 'document:d7'),
      triple('agent:unscoped', 'viewer', 'document:d8'),
      triple('user:nobody', 'viewer', 'document:d3'),
      triple('user:nobody', 'viewer', 'document:d5'),
    ];
    const [masked, ...plain] = await Promise.all([
      checker.check(g.tenantId, g.schema, queries),
      ...[0, 1, MAX_ARROW_DEPTH].map((depth) => checker.plainCheck(g.tenantId, g.schema, queries, depth)),
    ]);
    // Their scopes refuse them in check.
    expect(masked).toMatchObject({ answers: [false, false, true, false] });
    expect(plain).toEqual([
      [false, true, false, false], // d7 and d3 are one arrow away
      [true, true, true, false],
      [true, true, true, false],
    ]);
    await expect(checker.plainCheck(g.tenantId, g.schema, queries, MAX_ARROW_DEPTH + 1)).rejects.toThrow(RangeError);
  });

  it('related: the subjects of the grants on an object through a relation, in force now, in order, at most the limit', async () => {
    const T = Date.UTC(2030, 0, 1);
    const g = await publicTenant();
    await g.grant(['folder:f9', 'parent', 'document:d3'], ['folder:f0', 'parent', 'document:d3'], ['user:*', 'parent', 'document:d3']);
    await createGrant(services.db, g.tenantId, {
      ...triple('folder:f5', 'parent', 'document:d3'),
      window: { notBefore: T + 1000, expiresAt: T + 2000 },
    });
    const related = (ms: number, limit: number) =>
      sqlChecker({ now: () => T + ms }).related(g.tenantId, parseRef('document:d3', 'object'), 'parent', limit);
    const refs = (...values: string[]) => values.map((v) => parseRef(v, 'subject'));
    expect(await related(0, 10)).toEqual(refs('folder:f0', 'folder:f1', 'folder:f9', 'user:*'));
    expect(await related(1500, 10)).toEqual(refs('folder:f0', 'folder:f1', 'folder:f5', 'folder:f9', 'user:*'));
    expect(await related(1500, 2)).toEqual(refs('folder:f0', 'folder:f1'));
    expect(await sqlChecker().related(g.tenantId, parseRef('document:d3', 'object'), 'owner', 10)).toEqual([]);
  });

  it('the check statement is planned once a connection: one call of a function whose statements PostgreSQL runs with generic plans', async () => {
    // docs/decisions.md#the-check-statement-is-planned-once-a-connection: planned for each check, it cost as much as the walk.
    // Whether PostgreSQL plans a prepared query again depends on the database's statistics; a function's setting does not.
    expect(CHECK_SQL.trim()).toMatch(/^SELECT i, outcome, scope, until\s+FROM grantd_check\(/);
    const client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    try {
      const { rows } = await client.query<{ config: string[] | null }>("SELECT proconfig AS config FROM pg_proc WHERE proname = 'grantd_check'");
      expect(rows.map((r) => r.config)).toEqual([expect.arrayContaining(['plan_cache_mode=force_generic_plan', 'jit=off'])]);
    } finally {
      await client.end();
    }
  });
});

/**
 * Statements held at the lock of a table (`grants` unless told) that a test takes: each waits with
 * its connection, so what runs and what waits for the pool is what pg_stat_activity shows.
 */
async function withGrantsLocked<T>(work: (waiting: () => Promise<string[]>) => Promise<T>, table = 'grants'): Promise<T> {
  const [locker, admin] = [new pg.Client({ connectionString: databaseUrl() }), new pg.Client({ connectionString: databaseUrl() })];
  await Promise.all([locker.connect(), admin.connect()]);
  const waiting = async () =>
    (
      await admin.query<{ query: string }>(
        `SELECT query FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND wait_event_type = 'Lock'`,
        [POOL_NAME],
      )
    ).rows.map((r) => r.query);
  try {
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    return await work(waiting);
  } finally {
    await locker.query('ROLLBACK');
    await Promise.all([locker.end(), admin.end()]);
  }
}

/** Resolves once `done` holds, polling pg_stat_activity; fails after 10 s. */
async function until(done: () => Promise<boolean>): Promise<void> {
  await expect.poll(done, { timeout: 10_000, interval: 20 }).toBe(true);
}

describe('statements that answer checks and listings', () => {
  it('are cancelled after their time limit: a check is then refused for now (503), naming its time limit; a listing fails with the cancellation', async () => {
    const g = await tenantGraph(services);
    await g.namespace('document', DOCUMENT_RELATIONS);
    const pool = openGraphPool(namedUrl, 4, () => undefined, 300);
    try {
      const engine = engineWith({}, pool);
      await withGrantsLocked(async () => {
        const check = engine.check(g.tenantId, { subject: 'user:ann', relation: 'viewer', object: 'document:d1' }).catch((error: unknown) => error);
        const listing = engine.checker.candidates.objectIds(g.tenantId, 'document', null, 10).catch((error: unknown) => error);
        expect(await check).toMatchObject({ type: 'unavailable', detail: 'a check was not answered within 0.3 s; retry shortly' });
        expect(await listing).toMatchObject({ code: '57014' });
      });
      // The same two connections answer again: the limit and read-only are theirs from the start.
      await g.grant(['user:ann', 'owner', 'document:d1']);
      expect(await engine.check(g.tenantId, { subject: 'user:ann', relation: 'viewer', object: 'document:d1' })).toBe(true);
      expect(pool.totalCount).toBe(2);
      const clients = await Promise.all([pool.connect(), pool.connect()]);
      for (const client of clients) {
        const setting = async (name: string) => (await client.query<Record<string, string>>(`SHOW ${name}`)).rows[0]![name];
        expect([await setting('statement_timeout'), await setting('transaction_read_only')]).toEqual(['300ms', 'on']);
        client.release();
      }
    } finally {
      await pool.end();
    }
  });

  it("of one tenant hold at most its share of the pool: another tenant's check still runs, and the tenant's statements past its share are refused after a bound", async () => {
    const [a, b] = [await tenantGraph(services), await tenantGraph(services)];
    for (const g of [a, b]) await g.namespace('document', DOCUMENT_RELATIONS);
    await b.grant(['user:bob', 'owner', 'document:d1']);
    const engine = engineWith({ tenantPoolShare: 50, queueMs: 200 }); // 2 of the pool's 4
    const results = await withGrantsLocked(async (waiting) => {
      const listings = Array.from({ length: 4 }, () =>
        engine.checker.candidates.objectIds(a.tenantId, 'document', null, 10).then(
          (ids) => ids,
          (error: unknown) => error,
        ),
      );
      await until(async () => (await waiting()).length === 2);
      const check = engine.check(b.tenantId, { subject: 'user:bob', relation: 'viewer', object: 'document:d1' });
      await until(async () => (await waiting()).some((query) => query.includes('grantd_check(')));
      const statements = await waiting();
      expect(statements.filter((query) => query.includes('object_id'))).toHaveLength(2);
      // Those past the share are refused while the first two still wait.
      const refused = await Promise.all(listings.slice(2));
      for (const error of refused) expect(error).toMatchObject({ type: 'unavailable', detail: expect.stringContaining('retry shortly') });
      return { listings: listings.slice(0, 2), check };
    });
    expect(await results.check).toBe(true);
    expect(await Promise.all(results.listings)).toEqual([[], []]);
  });
});

describe("checks asked while their tenant's share of the pool is busy", () => {
  it('go to the database together in one statement once a connection of the share is free', async () => {
    const g = await tenantGraph(services);
    await g.namespace('document', DOCUMENT_RELATIONS);
    await g.grant(['user:ann', 'owner', 'document:d1'], ['user:bob', 'viewer', 'document:d2']);
    const engine = engineWith({ tenantPoolShare: 25 }); // 1 of the pool's 4
    const statements = vi.spyOn(GraphStatements.prototype, 'query');
    try {
      const answers = await withGrantsLocked(async (waiting) => {
        const first = engine.check(g.tenantId, { subject: 'user:ann', relation: 'viewer', object: 'document:d1' });
        await until(async () => (await waiting()).length === 1);
        // Asked in turns of their own while the share's one statement waits for the lock.
        const later: Promise<boolean>[] = [];
        for (const [subject, object] of [
          ['user:bob', 'document:d2'],
          ['user:ann', 'document:d2'],
          ['user:bob', 'document:d1'],
        ]) {
          later.push(engine.check(g.tenantId, { subject: subject!, relation: 'viewer', object: object! }));
          await new Promise((resolve) => setImmediate(resolve));
        }
        return { first, later };
      });
      expect(await answers.first).toBe(true);
      expect(await Promise.all(answers.later)).toEqual([true, false, false]);
      expect(statements.mock.calls.filter(([, config]) => config.name === 'grantd_check')).toHaveLength(2);
    } finally {
      statements.mockRestore();
    }
  });
});

describe('the pool of checks and listings', () => {
  it('tells of an idle connection it lost, and connects again', async () => {
    const lost: Error[] = [];
    const pool = openGraphPool(namedUrl, 1, (error) => lost.push(error));
    const admin = new pg.Client({ connectionString: databaseUrl() });
    await admin.connect();
    try {
      const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await until(async () => lost.length === 1);
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await admin.end();
      await pool.end();
    }
  });
});

describe('checks and listings filling their pool', () => {
  it("leave key lookups and writes their own pool, and another tenant's check the room the shares leave", async () => {
    // Pools of 5, shares of 40%: 2 connections a tenant, so two busy tenants hold 4 graph connections and leave 1.
    const node = createServices(
      namedUrl,
      { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 5, GRANTD_GRAPH_MEMORY: 0, GRANTD_TENANT_POOL_SHARE: 40 },
      pino({ level: 'silent' }),
    );
    try {
      const [a, b, c] = [await tenantGraph(node), await tenantGraph(node), await tenantGraph(node)];
      for (const g of [a, b, c]) await g.namespace('document', DOCUMENT_RELATIONS);
      await c.grant(['user:cat', 'owner', 'document:d1']);
      const key = await createKey(node.db, c.tenantId, 'test', ['check:read']);
      // Checks read `agents`, which a write of users' grants and a key lookup do not.
      const checks = await withGrantsLocked(async (waiting) => {
        const held: Promise<boolean>[] = [];
        for (const g of [a, b, b, a, c]) {
          held.push(g.check('user:ann', 'viewer', `document:d${held.length}`));
          await until(async () => (await waiting()).length === held.length);
        }
        expect(await node.metrics.registry.metrics()).toMatch(/^grantd_graph_pool_connections 5$/m);
        // Tenant c's key and write are answered while every graph connection waits.
        expect(await node.keys.verify(node.keys.credentialOf(key.secret)!)).toMatchObject({ tenantId: c.tenantId });
        await c.grant(['user:cat', 'owner', 'document:d2']);
        return held;
      }, 'agents');
      expect(await Promise.all(checks)).toEqual([false, false, false, false, false]);
      expect(
        await c.bulk([
          ['user:cat', 'viewer', 'document:d1'],
          ['user:cat', 'viewer', 'document:d2'],
        ]),
      ).toEqual([{ allowed: true }, { allowed: true }]);
    } finally {
      await node.close();
    }
  });
});
