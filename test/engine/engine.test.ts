import { describe, expect, it } from 'vitest';
import { overBudget } from '../../src/engine/budget.ts';
import type { CheckAnswer, Checker } from '../../src/engine/checker.ts';
import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { nextAfter, type Page } from '../../src/engine/listing-pages.ts';
import { formatRef, type Triple } from '../../src/engine/refs.ts';
import { CompiledSchema, type NamespaceDefinition } from '../../src/engine/schema.ts';
import { DomainError } from '../../src/errors.ts';

/**
 * The engine's own part (validation, the choice of queries, paging) over a store that answers from
 * a list: what the store is asked, and how its answers are used. The real stores are check.test.ts's.
 */
const DOCUMENT: NamespaceDefinition = { name: 'document', relations: { viewer: {}, editor: { includes: ['viewer'] } } };
const USER: NamespaceDefinition = { name: 'user', relations: null };
const FOLDER: NamespaceDefinition = { name: 'folder', relations: { viewer: {} } };

interface FakeOptions {
  /** Namespaces of the schema the store has loaded, and of the one it loads when asked for a fresher one. */
  loaded?: NamespaceDefinition[];
  reloaded?: NamespaceDefinition[];
  /** `subject relation object` of the checks the store allows, or the error it answers for them. */
  answers?: Record<string, CheckAnswer>;
  /** The listing walk's answer for a budget (null: it would go past it). */
  walk?: (budget: number) => string[] | null;
  /** The ids of objects named by some grant, for candidates. */
  objects?: string[];
  /** The ids of subjects named by some grant, for candidates. */
  subjects?: string[];
  pairsPerCheck?: number;
  walkScale?: number;
  /** The steps the store counts for each check (as it does for a check of a relation with rules). */
  stepsPerCheck?: number;
}

function fakeStore({
  loaded = [DOCUMENT, USER],
  reloaded = loaded,
  answers = {},
  walk = () => [],
  objects = [],
  subjects = [],
  pairsPerCheck = 1,
  walkScale = 1,
  stepsPerCheck = 0,
}: FakeOptions = {}) {
  const calls = {
    schema: [] as (number | undefined)[],
    evaluate: [] as string[][],
    walks: [] as { budget: number; limit: number; after: string | null }[],
    candidates: [] as { after: string | null; limit: number }[],
    holderWalks: [] as { budget: number; limit: number; after: string | null; namespace: string }[],
    subjectCandidates: [] as { namespace: string; after: string | null; limit: number }[],
    explained: [] as string[],
    invalidated: [] as string[],
  };
  const [first, fresher] = [new CompiledSchema(loaded), new CompiledSchema(reloaded)];
  const key = (q: Triple) => `${formatRef(q.subject)} ${q.relation} ${formatRef(q.object)}`;
  const store: Checker = {
    schemas: {
      get: async (_tenantId, options) => {
        calls.schema.push(options?.maxAgeMs);
        return options?.maxAgeMs === undefined ? first : fresher;
      },
    },
    checks: {
      check: async (_tenantId, _schema, queries) => {
        calls.evaluate.push(queries.map(key));
        return { answers: queries.map((q) => answers[key(q)] ?? false), ruledSteps: queries.length * stepsPerCheck };
      },
    },
    walks: {
      reachable: async (_tenantId, _schema, query) => {
        calls.walks.push({ budget: query.budget, limit: query.limit, after: query.after });
        return walk(query.budget);
      },
      holders: async (_tenantId, _schema, query) => {
        calls.holderWalks.push({ budget: query.budget, limit: query.limit, after: query.after, namespace: query.namespace });
        return walk(query.budget);
      },
      pairsPerCheck: () => pairsPerCheck,
      walkScale: () => walkScale,
    },
    candidates: {
      objectIds: async (_tenantId, _namespace, after, limit) => {
        calls.candidates.push({ after, limit });
        return objects.filter((id) => after === null || id > after).slice(0, limit);
      },
      subjectIds: async (_tenantId, namespace, after, limit) => {
        calls.subjectCandidates.push({ namespace, after, limit });
        return subjects.filter((id) => after === null || id > after).slice(0, limit);
      },
    },
    explainer: {
      explain: async (_tenantId, _schema, query) => {
        calls.explained.push(key(query));
        return { allowed: false, path: [], reason: 'no-path' };
      },
    },
    invalidate: (tenantId) => calls.invalidated.push(tenantId),
  };
  return { store, calls };
}

const typeOf = (error: unknown) => (error instanceof DomainError ? error.type : error);
const refusal = async (promise: Promise<unknown>) => promise.then(() => 'answered', typeOf);

describe('a check', () => {
  it("is the store's answer for its parsed query", async () => {
    const { store, calls } = fakeStore({ answers: { 'user:ann viewer document:d1': true } });
    const engine = new AuthorizationEngine(store);
    expect(await engine.check('t1', { subject: 'user:ann', relation: 'viewer', object: 'document:d1' })).toBe(true);
    expect(await engine.check('t1', { subject: 'user:bob', relation: 'viewer', object: 'document:d1' })).toBe(false);
    expect(calls.evaluate).toEqual([['user:ann viewer document:d1'], ['user:bob viewer document:d1']]);
  });

  it('is refused, without asking the store, for a malformed ref, an unknown relation or namespace', async () => {
    const { store, calls } = fakeStore();
    const engine = new AuthorizationEngine(store);
    const check = (subject: string, relation: string, object: string) => refusal(engine.check('t1', { subject, relation, object }));
    expect(await check('ann', 'viewer', 'document:d1')).toBe('invalid-subject');
    expect(await check('user:ann', 'viewer', 'd1')).toBe('invalid-object');
    expect(await check('user:ann', 'owner', 'document:d1')).toBe('unknown-relation');
    expect(await check('user:ann', 'viewer', 'nowhere:d1')).toBe('namespace-not-found');
    expect(calls.evaluate).toEqual([]);
  });

  it("throws the store's check-too-complex", async () => {
    const { store } = fakeStore({ answers: { 'user:ann viewer document:d1': overBudget(5) } });
    const engine = new AuthorizationEngine(store);
    expect(await refusal(engine.check('t1', { subject: 'user:ann', relation: 'viewer', object: 'document:d1' }))).toBe('check-too-complex');
  });

  it('reloads the schema, fresh within 100 ms, only when it lacks a namespace the check names', async () => {
    const { store, calls } = fakeStore({ reloaded: [DOCUMENT, USER, FOLDER], answers: { 'user:ann viewer folder:f1': true } });
    const engine = new AuthorizationEngine(store);
    expect(await engine.check('t1', { subject: 'user:ann', relation: 'viewer', object: 'document:d1' })).toBe(false);
    expect(calls.schema).toEqual([undefined]);
    // folder was made on another node since the schema was loaded.
    expect(await engine.check('t1', { subject: 'user:ann', relation: 'viewer', object: 'folder:f1' })).toBe(true);
    expect(calls.schema).toEqual([undefined, undefined, 100]);
  });

  it('tells the store to forget what it read of the tenant', () => {
    const { store, calls } = fakeStore();
    new AuthorizationEngine(store).invalidate('t1');
    expect(calls.invalidated).toEqual(['t1']);
  });
});

describe('a bulk of checks', () => {
  it('answers each item in order, an error item for one that cannot be checked, and asks the store for the rest at once', async () => {
    const { store, calls } = fakeStore({ answers: { 'user:ann viewer document:d1': true, 'user:ann editor document:d3': overBudget(5) } });
    const results = await new AuthorizationEngine(store).checkBulk('t1', [
      { subject: 'user:ann', relation: 'viewer', object: 'document:d1' },
      { subject: 'user:ann', relation: 'owner', object: 'document:d2' },
      { subject: 'user:ann', relation: 'editor', object: 'document:d3' },
      { subject: 'user:ann', relation: 'viewer', object: 'document:d4' },
    ]);
    expect(results).toEqual([
      { allowed: true },
      { allowed: false, error: { type: 'unknown-relation', detail: 'namespace document declares no relation owner; it declares editor, viewer' } },
      { allowed: false, error: { type: 'check-too-complex', detail: overBudget(5).detail } },
      { allowed: false },
    ]);
    expect(calls.evaluate).toEqual([['user:ann viewer document:d1', 'user:ann editor document:d3', 'user:ann viewer document:d4']]);
  });

  it('asks the store nothing when no item can be checked', async () => {
    const { store, calls } = fakeStore();
    const results = await new AuthorizationEngine(store).checkBulk('t1', [{ subject: 'user:ann', relation: 'viewer', object: 'nowhere:x' }]);
    expect(results).toEqual([{ allowed: false, error: { type: 'namespace-not-found', detail: 'namespace nowhere does not exist' } }]);
    expect(calls.evaluate).toEqual([]);
  });

  it('refuses the whole bulk for a malformed ref', async () => {
    const { store } = fakeStore();
    const bulk = new AuthorizationEngine(store).checkBulk('t1', [{ subject: 'user:ann', relation: 'viewer', object: 'document' }]);
    expect(await refusal(bulk)).toBe('invalid-object');
  });
});

/** Ids d0000, d0001, ... in order. */
const docIds = (count: number) => Array.from({ length: count }, (_, n) => `d${String(n).padStart(4, '0')}`);
/** The answers of a store where ann views the given documents. */
const viewing = (ids: readonly string[]) => Object.fromEntries(ids.map((id) => [`user:ann viewer document:${id}`, true]));
const listPage = (engine: AuthorizationEngine, limit: number, after: string | null = null) =>
  engine.listObjects('t1', { subject: 'user:ann', namespace: 'document', relation: 'viewer', after, limit });

describe('a listing', () => {
  it("is the walk's page when the walk stays within the listing budget, with one id more to tell whether there is more", async () => {
    const { store, calls } = fakeStore({ walk: () => ['a', 'b', 'c'] });
    const engine = new AuthorizationEngine(store, { listingBudget: 50 });
    expect(await listPage(engine, 2, 'x')).toEqual({ ids: ['a', 'b'], more: true });
    expect(await listPage(engine, 3)).toEqual({ ids: ['a', 'b', 'c'], more: false });
    expect(calls.walks).toEqual([
      { budget: 50, limit: 3, after: 'x' },
      { budget: 50, limit: 4, after: null },
    ]);
    expect(calls.candidates).toEqual([]);
  });

  it('is refused for a malformed subject, an unknown relation or namespace', async () => {
    const engine = new AuthorizationEngine(fakeStore().store);
    const list = (subject: string, namespace: string, relation: string) =>
      refusal(engine.listObjects('t1', { subject, namespace, relation, after: null, limit: 10 }));
    expect(await list('ann', 'document', 'viewer')).toBe('invalid-subject');
    expect(await list('user:ann', 'document', 'owner')).toBe('unknown-relation');
    expect(await list('user:ann', 'nowhere', 'viewer')).toBe('namespace-not-found');
  });

  it('checks candidates in batches that double up to 1,000 when the walk would go past its budget', async () => {
    const objects = docIds(3000);
    const { store, calls } = fakeStore({ walk: () => null, objects, answers: viewing(['d0005', 'd0999', 'd2999']) });
    const engine = new AuthorizationEngine(store, { listingBudget: 0, maxListingBudget: 0 });
    expect(await listPage(engine, 10)).toEqual({ ids: ['d0005', 'd0999', 'd2999'], more: false });
    expect(calls.candidates.map((c) => c.limit)).toEqual([11, 22, 44, 88, 176, 352, 704, 1000, 1000]);
    // Each batch starts after the last candidate of the one before; the last is short, so there is no other.
    expect(calls.candidates.map((c) => c.after)).toEqual([null, 'd0010', 'd0032', 'd0076', 'd0164', 'd0340', 'd0692', 'd1396', 'd2396']);
    expect(calls.walks).toHaveLength(1);
  });

  it('stops checking candidates once the page and the id after it are found', async () => {
    const objects = docIds(1000);
    const even = objects.filter((_, n) => n % 2 === 0);
    const { store, calls } = fakeStore({ walk: () => null, objects, answers: viewing(even) });
    const engine = new AuthorizationEngine(store, { listingBudget: 0, maxListingBudget: 0 });
    expect(await listPage(engine, 100)).toEqual({ ids: even.slice(0, 100), more: true });
    // 101 candidates hold 51 of the 101 ids wanted, the next 202 the other 50.
    expect(calls.candidates).toEqual([
      { after: null, limit: 101 },
      { after: 'd0100', limit: 202 },
    ]);
    expect(await listPage(engine, 3, 'd0990')).toEqual({ ids: ['d0992', 'd0994', 'd0996'], more: true });
    expect(await listPage(engine, 5, 'd0990')).toEqual({ ids: ['d0992', 'd0994', 'd0996', 'd0998'], more: false });
  });

  it("throws a candidate's check-too-complex rather than leaving the candidate out", async () => {
    const { store } = fakeStore({ walk: () => null, objects: docIds(5), answers: { 'user:ann viewer document:d0002': overBudget(5) } });
    const engine = new AuthorizationEngine(store, { listingBudget: 0, maxListingBudget: 0 });
    expect(await refusal(listPage(engine, 10))).toBe('check-too-complex');
  });

  describe('of a subject that reaches sparsely', () => {
    // The first walk's budget is 10; the store walks within any budget above it.
    const sparse = (pairsPerCheck: number, maxListingBudget = 1000, walk = (budget: number) => (budget > 10 ? ['d0005', 'd0900'] : null)) => {
      const { store, calls } = fakeStore({ walk, objects: docIds(1000), answers: viewing(['d0005', 'd0900']), pairsPerCheck });
      return { engine: new AuthorizationEngine(store, { listingBudget: 10, maxListingBudget }), calls };
    };

    it('walks after all, once, with a budget as costly as the checks still to come', async () => {
      // One of the first 11 candidates is allowed: 10 more would take 110 checks, at 2 pairs each.
      const { engine, calls } = sparse(2);
      expect(await listPage(engine, 10)).toEqual({ ids: ['d0005', 'd0900'], more: false });
      expect(calls.walks.map((w) => w.budget)).toEqual([10, 220]);
      expect(calls.candidates).toHaveLength(1);
    });

    it('scales both walks by how much farther the checker walks for the same cost (in memory)', async () => {
      // A first walk of 25 pairs; 110 checks at 2 pairs each are past it, so a second of 220.
      const { store, calls } = fakeStore({
        walk: (budget) => (budget > 25 ? ['d0005', 'd0900'] : null),
        objects: docIds(1000),
        answers: viewing(['d0005', 'd0900']),
        pairsPerCheck: 2,
        walkScale: 2.5,
      });
      const engine = new AuthorizationEngine(store, { listingBudget: 10, maxListingBudget: 1000 });
      expect(await listPage(engine, 10)).toEqual({ ids: ['d0005', 'd0900'], more: false });
      expect(calls.walks.map((w) => w.budget)).toEqual([25, 220]);
    });

    it('walks at least twice the first budget, and at most the largest', async () => {
      // 110 checks at a tenth of a pair each: 11 pairs, past the first budget, less than twice it.
      expect((await run(sparse(0.1))).budgets).toEqual([10, 20]);
      expect((await run(sparse(100))).budgets).toEqual([10, 1000]);
      // None found in the first batch: as many checks to come as there may be, so the largest budget.
      const { engine, calls } = sparse(1, 500, (budget) => (budget >= 500 ? [] : null));
      expect(await listPage(engine, 1, 'd0950')).toEqual({ ids: [], more: false });
      expect(calls.walks.map((w) => w.budget)).toEqual([10, 500]);
    });

    it('keeps checking candidates while they show it reaches densely enough, and weighs them again after each batch', async () => {
      // 10 more after one in 11 would take 110 checks of a twentieth of a pair: 5.5 pairs, within the
      // first budget; after one in 33, 330 checks: 16.5 pairs, past it.
      const { engine, calls } = sparse(0.05);
      expect(await listPage(engine, 10)).toEqual({ ids: ['d0005', 'd0900'], more: false });
      expect(calls.walks.map((w) => w.budget)).toEqual([10, 20]);
      expect(calls.candidates).toHaveLength(2);
    });

    it('goes back to checking candidates, without walking again, when the second walk outgrows its budget too', async () => {
      const { engine, calls } = sparse(2, 1000, () => null);
      expect(await listPage(engine, 10)).toEqual({ ids: ['d0005', 'd0900'], more: false });
      expect(calls.walks.map((w) => w.budget)).toEqual([10, 220]);
      expect(calls.candidates.length).toBeGreaterThan(2);
    });

    it('never walks again when the largest budget is no more than the first', async () => {
      const { engine, calls } = sparse(2, 10);
      expect(await listPage(engine, 10)).toEqual({ ids: ['d0005', 'd0900'], more: false });
      expect(calls.walks).toHaveLength(1);
    });

    it('weighs the checks still to come by the share of candidates allowed', async () => {
      // Two of the first 11 candidates allowed: 9 more would take 49.5 checks, at 2 pairs each: a walk of 99.
      const { store, calls } = fakeStore({
        walk: (budget) => (budget > 10 ? ['d0003', 'd0007', 'd0900'] : null),
        objects: docIds(1000),
        answers: viewing(['d0003', 'd0007', 'd0900']),
        pairsPerCheck: 2,
      });
      const engine = new AuthorizationEngine(store, { listingBudget: 10, maxListingBudget: 1000 });
      expect(await listPage(engine, 10)).toEqual({ ids: ['d0003', 'd0007', 'd0900'], more: false });
      expect(calls.walks.map((w) => w.budget)).toEqual([10, 99]);
    });

    const run = async ({ engine, calls }: ReturnType<typeof sparse>) => {
      await listPage(engine, 10);
      return { budgets: calls.walks.map((w) => w.budget) };
    };
  });
});

describe('a listing of a relation with rules (docs/checks-and-listings.md#what-a-page-costs)', () => {
  const RULED: NamespaceDefinition = {
    name: 'document',
    relations: { viewer: {}, blocked: {}, open: { includes: ['viewer'], excludes: ['blocked'] } },
  };
  const listOpen = (engine: AuthorizationEngine, after: string | null) =>
    engine.listObjects('t1', { subject: 'user:ann', namespace: 'document', relation: 'open', after, limit: 100 });
  const objects = docIds(200);
  const held = objects.filter((_, n) => n % 10 === 3);
  const ruledStore = () =>
    fakeStore({
      loaded: [RULED, USER],
      walk: () => ['d0001'],
      objects,
      answers: Object.fromEntries(held.map((id) => [`user:ann open document:${id}`, true])),
      stepsPerCheck: 1_000,
    });

  it('checks its candidates 16 at a time and ends a page short, where it stopped, once their checks took more steps than a listing may walk', async () => {
    const { store, calls } = ruledStore();
    const engine = new AuthorizationEngine(store, { maxListingBudget: 40_000 });
    // Three parts of 16 candidates take 48,000 steps, past 40,000: the page holds the ids of the 48, and the next starts after them.
    expect(await listOpen(engine, null)).toEqual({ ids: ['d0003', 'd0013', 'd0023', 'd0033', 'd0043'], more: true, checkedTo: 'd0047' });
    expect(calls.evaluate.map((part) => part.length)).toEqual([16, 16, 16]);
    expect(calls.walks).toEqual([]);
    calls.evaluate.length = 0;
    // Candidates that end within the bound end the listing: the last page is whole.
    expect(await listOpen(engine, 'd0191')).toEqual({ ids: ['d0193'], more: false });
    expect(calls.evaluate.map((part) => part.length)).toEqual([8]);
  });

  const listRuled = (engine: AuthorizationEngine, limit: number) =>
    engine.listObjects('t1', { subject: 'user:ann', namespace: 'document', relation: 'open', after: null, limit });
  const ruledAnswers = (ids: readonly string[]) => Object.fromEntries(ids.map((id) => [`user:ann open document:${id}`, true]));

  it('ends a page short at the last part of a whole batch, and not when the namespace has no more candidates', async () => {
    // A page of 2 reads 3 candidates at first: one part, past the bound at once.
    const { store } = fakeStore({ loaded: [RULED, USER], objects: docIds(10), answers: ruledAnswers(['d0001', 'd0005']), stepsPerCheck: 100_000 });
    const engine = new AuthorizationEngine(store, { maxListingBudget: 40_000 });
    expect(await listRuled(engine, 2)).toEqual({ ids: ['d0001'], more: true, checkedTo: 'd0002' });
    const few = fakeStore({ loaded: [RULED, USER], objects: docIds(2), answers: ruledAnswers(['d0001']), stepsPerCheck: 100_000 });
    expect(await listRuled(new AuthorizationEngine(few.store, { maxListingBudget: 40_000 }), 2)).toEqual({ ids: ['d0001'], more: false });
  });

  it('ends a page once it is full, neither cut short nor checking the candidates after it', async () => {
    const full = fakeStore({ loaded: [RULED, USER], objects: docIds(10), answers: ruledAnswers(docIds(10)), stepsPerCheck: 100_000 });
    expect(await listRuled(new AuthorizationEngine(full.store, { maxListingBudget: 40_000 }), 2)).toEqual({ ids: ['d0000', 'd0001'], more: true });
    // Batches of 3, 6, 12 and 24 candidates: the fourth's first part fills the page; its second part holds a candidate past its budget.
    const { store, calls } = fakeStore({
      loaded: [RULED, USER],
      objects: docIds(60),
      answers: { ...ruledAnswers(['d0021', 'd0022', 'd0023']), 'user:ann open document:d0040': overBudget(5) },
    });
    expect(await listRuled(new AuthorizationEngine(store), 2)).toEqual({ ids: ['d0021', 'd0022'], more: true });
    expect(calls.evaluate.map((part) => part.length)).toEqual([3, 6, 12, 16]);
  });

  it('lists every id it holds, once, page after page from where each ended', async () => {
    const engine = new AuthorizationEngine(ruledStore().store, { maxListingBudget: 40_000 });
    const pages: Page[] = [];
    for (let after: string | null = null; pages.at(-1)?.more !== false; after = nextAfter(pages.at(-1)!)!) pages.push(await listOpen(engine, after));
    expect(pages.flatMap((page) => page.ids)).toEqual(held);
    expect(pages.map((page) => page.checkedTo)).toEqual(['d0047', 'd0095', 'd0143', 'd0191', undefined]);
  });

  it("starts the next page after the page's last id, or after the last candidate a page cut short checked", () => {
    expect(nextAfter({ ids: ['d0001', 'd0002', 'd0003'], more: true })).toBe('d0003');
    expect(nextAfter({ ids: ['d0001', 'd0002', 'd0003'], more: true, checkedTo: 'd0009' })).toBe('d0009');
    expect(nextAfter({ ids: [], more: false })).toBeUndefined();
  });
});

describe('a listing of subjects', () => {
  const listSubjects = (engine: AuthorizationEngine, query: Partial<Parameters<AuthorizationEngine['listSubjects']>[1]> = {}) =>
    engine.listSubjects('t1', { object: 'document:d1', relation: 'viewer', subjectNamespace: 'user', after: null, limit: 2, ...query });

  it("is the walk from the object's page while it stays within the listing budget", async () => {
    const { store, calls } = fakeStore({ walk: () => ['ann', 'bob', 'cy'] });
    const engine = new AuthorizationEngine(store, { listingBudget: 50 });
    expect(await listSubjects(engine, { after: 'a' })).toEqual({ ids: ['ann', 'bob'], more: true });
    expect(calls.holderWalks).toEqual([{ budget: 50, limit: 3, after: 'a', namespace: 'user' }]);
    expect(calls.subjectCandidates).toEqual([]);
  });

  it("checks the namespace's subjects in order when the walk would go past its budget", async () => {
    const subjects = ['ann', 'bob', 'cy', 'dee', 'eve'];
    const answers = { 'user:bob viewer document:d1': true, 'user:dee viewer document:d1': true, 'user:eve viewer document:d1': true };
    const { store, calls } = fakeStore({ walk: () => null, subjects, answers });
    const engine = new AuthorizationEngine(store, { listingBudget: 0, maxListingBudget: 0 });
    expect(await listSubjects(engine)).toEqual({ ids: ['bob', 'dee'], more: true });
    expect(await listSubjects(engine, { after: 'dee' })).toEqual({ ids: ['eve'], more: false });
    expect(calls.subjectCandidates).toEqual([
      { namespace: 'user', after: null, limit: 3 },
      { namespace: 'user', after: 'cy', limit: 6 },
      { namespace: 'user', after: 'dee', limit: 3 },
    ]);
  });

  it('is refused for a malformed object, an unknown relation, object namespace or subject namespace', async () => {
    const engine = new AuthorizationEngine(fakeStore().store);
    expect(await refusal(listSubjects(engine, { object: 'd1' }))).toBe('invalid-object');
    expect(await refusal(listSubjects(engine, { relation: 'owner' }))).toBe('unknown-relation');
    expect(await refusal(listSubjects(engine, { object: 'nowhere:d1' }))).toBe('namespace-not-found');
    const unknown = await listSubjects(engine, { subjectNamespace: 'robot' }).catch((error: unknown) => error);
    expect(unknown).toMatchObject({ type: 'invalid-request', errors: [{ path: 'query.subject_namespace' }] });
  });
});

describe('an explanation', () => {
  it("is the store's for the parsed check, validated as a check is", async () => {
    const { store, calls } = fakeStore();
    const engine = new AuthorizationEngine(store);
    expect(await engine.explain('t1', { subject: 'user:ann', relation: 'viewer', object: 'document:d1' })).toEqual({
      allowed: false,
      path: [],
      reason: 'no-path',
    });
    expect(calls.explained).toEqual(['user:ann viewer document:d1']);
    expect(await refusal(engine.explain('t1', { subject: 'user:ann', relation: 'owner', object: 'document:d1' }))).toBe('unknown-relation');
    expect(await refusal(engine.explain('t1', { subject: 'user:ann', relation: 'viewer', object: 'nowhere:d1' }))).toBe('namespace-not-found');
    expect(await refusal(engine.explain('t1', { subject: 'ann', relation: 'viewer', object: 'document:d1' }))).toBe('invalid-subject');
  });
});

describe('triples to write', () => {
  it('are parsed, and checked against the namespaces only when asked', async () => {
    const { store, calls } = fakeStore();
    const engine = new AuthorizationEngine(store);
    const triples = [{ subject: 'user:ann', relation: 'owner', object: 'document:d1' }];
    expect(await engine.parseTriples('t1', triples, false)).toEqual([
      { subject: { ns: 'user', id: 'ann' }, relation: 'owner', object: { ns: 'document', id: 'd1' } },
    ]);
    expect(calls.schema).toEqual([]);
    expect(await refusal(engine.parseTriples('t1', triples, true))).toBe('unknown-relation');
    expect(await engine.parseTriples('t1', [{ subject: 'user:ann', relation: 'viewer', object: 'document:d1' }], true)).toHaveLength(1);
    expect(await refusal(engine.parseTriples('t1', [{ subject: 'user', relation: 'viewer', object: 'document:d1' }], false))).toBe('invalid-subject');
  });

  it("name the item and field of a problem, given the request list's name", async () => {
    const engine = new AuthorizationEngine(fakeStore().store);
    const problem = (promise: Promise<unknown>) =>
      promise.then(
        () => 'answered',
        (error: DomainError) => `${error.type}: ${error.detail}`,
      );
    const ok = { subject: 'user:ann', relation: 'viewer', object: 'document:d1' };
    expect(await problem(engine.parseTriples('t1', [ok, { ...ok, subject: 'user' }], false, 'writes'))).toMatch(
      /^invalid-subject: writes\[1\]\.subject: /,
    );
    expect(await problem(engine.parseTriples('t1', [ok, ok, { ...ok, relation: 'member' }], true, 'deletes'))).toMatch(
      /^unknown-relation: deletes\[2\]\.relation: /,
    );
    expect(await problem(engine.parseTriples('t1', [{ ...ok, object: 'nowhere:x' }], true, 'writes'))).toMatch(
      /^namespace-not-found: writes\[0\]\.object: /,
    );
    expect(await problem(engine.parseTriples('t1', [{ ...ok, subject: 'user' }], false))).toMatch(/^invalid-subject: subject "user"/);
  });
});

describe('every request naming a namespace', () => {
  const viewFolder = { subject: 'user:ann', relation: 'viewer', object: 'folder:f1' };
  const requests: [string, (engine: AuthorizationEngine, ns: 'document' | 'folder') => Promise<unknown>][] = [
    ['parseTriples', (engine, ns) => engine.parseTriples('t1', [{ ...viewFolder, object: `${ns}:x` }], true)],
    ['checkBulk', (engine, ns) => engine.checkBulk('t1', [{ ...viewFolder, object: `${ns}:x` }])],
    ['listObjects', (engine, ns) => engine.listObjects('t1', { subject: 'user:ann', namespace: ns, relation: 'viewer', after: null, limit: 10 })],
    [
      'listSubjects',
      (engine, ns) => engine.listSubjects('t1', { object: `${ns}:x`, relation: 'viewer', subjectNamespace: 'user', after: null, limit: 2 }),
    ],
    [
      'listSubjects of a namespace',
      (engine, ns) => engine.listSubjects('t1', { object: 'document:d1', relation: 'viewer', subjectNamespace: ns, after: null, limit: 2 }),
    ],
    ['explain', (engine, ns) => engine.explain('t1', { ...viewFolder, object: `${ns}:x` })],
  ];

  it.each(requests)('%s reloads the schema when it lacks the namespace, and only then', async (_, request) => {
    const known = fakeStore({ reloaded: [DOCUMENT, USER, FOLDER] });
    await request(new AuthorizationEngine(known.store), 'document');
    expect(known.calls.schema).toEqual([undefined]);
    const fresh = fakeStore({ reloaded: [DOCUMENT, USER, FOLDER] });
    const answer = await request(new AuthorizationEngine(fresh.store), 'folder');
    expect(fresh.calls.schema).toEqual([undefined, 100]);
    expect(JSON.stringify(answer ?? null)).not.toContain('namespace-not-found');
  });
});
