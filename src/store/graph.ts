import DataLoader from 'dataloader';
import type pg from 'pg';
import { FRESHNESS_MS } from '../config.ts';
import { TenantCache } from '../cache/tenant-cache.ts';
import { CheckTimeShares } from '../engine/check-time.ts';
import { RefreshingCache } from '../cache/refreshing-cache.ts';
import { DEFAULT_CHECK_BUDGET, overBudget } from '../engine/budget.ts';
import { RetryLater } from '../errors.ts';
import type { GraphAnswer, GraphStore } from '../engine/engine.ts';
import type { Ref, Triple } from '../engine/refs.ts';
import { CompiledSchema } from '../engine/schema.ts';
import type { Db } from './db.ts';
import type { HeldTenants } from './held-tenants.ts';
import { namespaceDefinitions } from './namespaces.ts';
import { masksAdmit } from '../engine/scope.ts';
import { isCancelled } from './errors.ts';
import { GraphStatements, type GraphStatementOptions } from './graph-statements.ts';
import { CHECK_SQL, type CheckOutcome, OBJECT_IDS_SQL, REACHABLE_SQL } from './graph-sql.ts';

/**
 * The engine's store. Checks and listing walks of a tenant whose grants are held in memory
 * (held-tenants.ts) and current are answered there, without a round trip. Otherwise each check
 * batch, like each listing walk, is one SQL statement, a recursive query over the grants joined
 * against the tenant's compiled namespace tables (passed as JSON), and check answers are cached
 * for `maxAgeMs`.
 *
 * An answer is the graph's and the agent masks' together, both read from one state of the tenant
 * (the grants held in memory at one moment, or one statement), and only such answers are cached:
 * a mask and the grants it masks never come from two states.
 *
 * Those statements go to a pg pool of their own (openGraphPool) directly, as named prepared statements: measured here, Prisma spends
 * about 1 ms of CPU per raw query (1.1 ms for SELECT $1 against 0.2 ms on the pool), which alone
 * would cap a node near 900 checks a second. Everything else goes through Prisma, on its own pool.
 *
 * Checks (and agent lookups) asked during one turn of the event loop go to the database together,
 * one statement per tenant: under load, the round trip, not the graph walk, is what a check costs.
 */
export class SqlGraphStore implements GraphStore {
  // Outcomes, not answers: DataLoader would take an Error value (a check refused for its budget) for a failed load.
  private readonly checkBatches = new TenantBatches<{ schema: CompiledSchema; query: Triple }, SqlOutcome>((tenantId, items) =>
    this.evaluateNow(tenantId, items),
  );

  /** This process's time on checks, in memory and in its graph statements, shared between tenants. */
  private readonly checkTime = new CheckTimeShares();
  /** Answers the database gave (masks applied); a write on another node shows within `maxAgeMs`. */
  private readonly answers: TenantCache<boolean>;
  /** The most steps one check may take (GRANTD_CHECK_BUDGET), and how long it may walk in the database. */
  private readonly checkBudget: number;
  private readonly walkMs: number;
  /** Every statement of this store: timed, and a tenant's limited to a share of the pool. */
  private readonly statements: GraphStatements;

  constructor(
    /** The graph statements' pool (openGraphPool): its connections carry their time limit. */
    pool: pg.Pool,
    private readonly schemas: SchemaCache,
    /** Tenants' grants in memory, which answer checks when current; null to always ask the database. */
    private readonly memory: HeldTenants | null = null,
    {
      maxAgeMs = FRESHNESS_MS,
      maxCachedAnswers = 200_000,
      checkBudget = DEFAULT_CHECK_BUDGET,
      walkMs = CHECK_WALK_MS,
      clock,
      ...statements
    }: {
      maxAgeMs?: number;
      maxCachedAnswers?: number;
      checkBudget?: number | undefined;
      walkMs?: number;
      /** The answer cache's clock (tests move it). */
      clock?: { now(): number };
    } & GraphStatementOptions = {},
  ) {
    this.statements = new GraphStatements(pool, { ...statements, checkTime: this.checkTime });
    this.answers = new TenantCache({ maxAgeMs, maxEntries: maxCachedAnswers, clock });
    this.checkBudget = checkBudget;
    this.walkMs = walkMs;
  }

  invalidate(tenantId: string): void {
    this.answers.invalidate(tenantId);
    this.memory?.invalidate(tenantId);
  }

  pairsPerCheck(tenantId: string): number {
    return this.memory?.holds(tenantId) ? PAIRS_PER_CHECK_IN_MEMORY : PAIRS_PER_CHECK_IN_DATABASE;
  }

  schema(tenantId: string, options?: { maxAgeMs?: number }): Promise<CompiledSchema> {
    return this.schemas.get(tenantId, options);
  }

  /**
   * From memory when the tenant's grants are held there and current (no cache needed), else cached
   * answers and the database. A check refused for its budget is not cached: it is refused again.
   */
  async evaluate(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<GraphAnswer[]> {
    const held = await this.memory?.current(tenantId);
    if (held) {
      const admits = (q: Triple) => masksAdmit(q.subject, q.object.ns, q.relation, (id) => held.agents.get(id));
      return held.index.checkAll(schema, queries, this.checkBudget, { admits, turns: this.checkTime.of(tenantId) });
    }
    const generation = this.answers.generation(tenantId);
    const answers: GraphAnswer[] = new Array(queries.length);
    const missing: number[] = [];
    queries.forEach((query, i) => {
      const cached = this.answers.get(tenantId, answerKey(query));
      if (cached === undefined) missing.push(i);
      else answers[i] = cached;
    });
    if (missing.length > 0) {
      const evaluated = await this.checkBatches.load(
        tenantId,
        missing.map((i) => ({ schema, query: queries[i]! })),
      );
      missing.forEach((queryIndex, i) => {
        const answer = this.answerOf(queries[queryIndex]!, evaluated[i]!);
        answers[queryIndex] = answer;
        if (typeof answer === 'boolean') this.answers.set(tenantId, answerKey(queries[queryIndex]!), answer, generation);
      });
    }
    return answers;
  }

  /** One statement per schema among the items (a batch normally holds one: the tenant's latest). */
  private async evaluateNow(tenantId: string, items: ReadonlyArray<{ schema: CompiledSchema; query: Triple }>): Promise<SqlOutcome[]> {
    const bySchema = new Map<CompiledSchema, number[]>();
    items.forEach(({ schema }, index) => {
      const indexes = bySchema.get(schema);
      if (indexes) indexes.push(index);
      else bySchema.set(schema, [index]);
    });
    const outcomes: SqlOutcome[] = items.map(() => ({ outcome: 'denied', scope: null }));
    await Promise.all(
      [...bySchema].map(async ([schema, indexes]) => {
        const batch = JSON.stringify(
          indexes.map((i) => {
            const q = items[i]!.query;
            return { i, sns: q.subject.ns, sid: q.subject.id, ons: q.object.ns, oid: q.object.id, rel: q.relation };
          }),
        );
        try {
          const { rows } = await this.statements.query<{ i: number; outcome: CheckOutcome | null; scope: string[] | null }>(tenantId, {
            name: 'grantd_check',
            text: CHECK_SQL,
            values: [tenantId, batch, schema.closureJson, schema.arrowsJson, this.checkBudget, this.walkMs],
          });
          for (const { i, outcome, scope } of rows) outcomes[i] = { outcome: outcome ?? 'denied', scope };
        } catch (error) {
          if (!isCancelled(error)) throw error;
          for (const i of indexes) outcomes[i] = { outcome: 'cancelled', scope: null };
        }
      }),
    );
    return outcomes;
  }

  /**
   * A mask that refuses answers even a check the graph could not. A check past its work budget is
   * check-too-complex, that check's answer; one that ran out of time is the database's moment, not
   * the check's, and the request is refused for now (503, retried by clients) rather than told to
   * simplify its model.
   */
  private answerOf(query: Triple, { outcome, scope }: SqlOutcome): GraphAnswer {
    if (outcome === 'cancelled') {
      throw new RetryLater(`a check was not answered within ${this.statements.statementTimeoutMs / 1000} s; retry shortly`, 'check statement cancelled');
    }
    if (!masksAdmit(query.subject, query.object.ns, query.relation, () => scope)) return false;
    switch (outcome) {
      case 'allowed':
        return true;
      case 'denied':
        return false;
      case 'too-many-steps':
        return overBudget(this.checkBudget);
      case 'too-slow':
        throw new RetryLater(`a check was still walking after ${this.walkMs / 1000} s; retry shortly`, 'check walk too slow');
    }
  }

  /** From memory when the tenant's grants are held there and current, else one statement. */
  async reachable(
    tenantId: string,
    schema: CompiledSchema,
    query: { subject: Ref; namespace: string; relation: string; after: string | null; limit: number; budget: number },
  ): Promise<string[] | null> {
    const held = await this.memory?.current(tenantId);
    if (held) {
      if (!masksAdmit(query.subject, query.namespace, query.relation, (id) => held.agents.get(id))) return [];
      return held.index.reachable(schema, query);
    }
    const { rows } = await this.statements.query<{ scope: string[] | null; walked: number; ids: string[] }>(tenantId, {
      name: 'grantd_reachable',
      text: REACHABLE_SQL,
      values: [
        tenantId,
        query.subject.ns,
        query.subject.id,
        schema.closureJson,
        schema.arrowsJson,
        query.namespace,
        query.relation,
        query.after,
        query.limit,
        query.budget,
      ],
    });
    const [result] = rows;
    if (!result) return null;
    if (!masksAdmit(query.subject, query.namespace, query.relation, () => result.scope)) return [];
    return result.walked <= query.budget ? result.ids : null;
  }

  async objectIds(tenantId: string, namespace: string, after: string | null, limit: number): Promise<string[]> {
    const { rows } = await this.statements.query<{ id: string }>(tenantId, {
      name: 'grantd_object_ids',
      text: OBJECT_IDS_SQL,
      values: [tenantId, namespace, after, limit],
    });
    return rows.map((r) => r.id);
  }
}

/**
 * Compiled namespaces per tenant, used for at most `maxAgeMs` (reloaded ahead, off the request
 * path, under steady traffic) and forgotten on this node's own writes; at most `maxTenants` are
 * held, the least recently used going first. A reload first reads the tenant's definitions version
 * (bumped by every statement that changes its namespaces) and keeps the schema it holds when that
 * has not moved: a definition is compiled, and indexed by the grants held in memory, once per
 * version, not at every reload.
 */
export class SchemaCache {
  private readonly cache: RefreshingCache<string, { version: bigint; schema: CompiledSchema }>;

  constructor(
    private readonly db: Db,
    { maxAgeMs = FRESHNESS_MS, maxTenants = 10_000 }: { maxAgeMs?: number; maxTenants?: number } = {},
  ) {
    this.cache = new RefreshingCache((tenantId, held) => this.load(tenantId, held), maxAgeMs, maxTenants);
  }

  /** The tenant's schema, loaded less than `maxAgeMs` ago (default: the cache's). */
  async get(tenantId: string, options?: { maxAgeMs?: number }): Promise<CompiledSchema> {
    return (await this.cache.get(tenantId, options))!.schema;
  }

  invalidate(tenantId: string): void {
    this.cache.delete(tenantId);
  }

  private async load(tenantId: string, held: { version: bigint; schema: CompiledSchema } | undefined) {
    // The version before the definitions: definitions read after it are at least as new, so a
    // pair that is off is one the next reload corrects, never one that sticks.
    const tenant = await this.db.tenant.findUnique({ where: { id: tenantId }, select: { namespacesVersion: true } });
    const version = tenant?.namespacesVersion ?? -1n;
    if (held?.version === version) return held;
    return { version, schema: new CompiledSchema(await namespaceDefinitions(this.db, tenantId)) };
  }
}

/**
 * Per-tenant DataLoaders that gather the loads made in one turn of the event loop (setImmediate runs
 * after the poll phase has read every request that arrived together) into one call of `run`.
 * A tenant's loader is dropped when its batch starts, so quiet tenants cost nothing.
 */
class TenantBatches<K, V> {
  private readonly loaders = new Map<string, DataLoader<K, V>>();

  constructor(private readonly run: (tenantId: string, keys: readonly K[]) => Promise<V[]>) {}

  async load(tenantId: string, keys: readonly K[]): Promise<V[]> {
    let loader = this.loaders.get(tenantId);
    if (!loader) {
      const created: DataLoader<K, V> = new DataLoader(
        (batch) => {
          if (this.loaders.get(tenantId) === created) this.loaders.delete(tenantId);
          return this.run(tenantId, batch);
        },
        { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (dispatch) => setImmediate(dispatch) },
      );
      this.loaders.set(tenantId, created);
      loader = created;
    }
    const results = await loader.loadMany(keys);
    const failed = results.find((r): r is Error => r instanceof Error);
    if (failed) throw failed;
    return results as V[];
  }
}

/**
 * A check still walking after this long stops at its next depth, and its request is 503 unavailable
 * (answerOf), so that it does not hold its statement (and the checks batched with it) up to the
 * statement's time limit.
 */
export const CHECK_WALK_MS = 1_000;

/** What the database says of a check; 'cancelled': its statement ran out of time. */
type SqlOutcome = { outcome: CheckOutcome | 'denied' | 'cancelled'; scope: string[] | null };

/** Ids cannot hold NUL, so joining with it is unambiguous. */
const answerKey = (q: Triple): string => `${q.subject.ns}\0${q.subject.id}\0${q.relation}\0${q.object.ns}\0${q.object.id}`;

/**
 * Measured here: in the database, a walked pair 7 to 8 us of PostgreSQL and a candidate checked
 * about 50 us; in memory, a walked pair about 0.2 us and a candidate about 4.5 (its id read from
 * the database ~1.3 us, the check about 3).
 */
const PAIRS_PER_CHECK_IN_DATABASE = 6;
const PAIRS_PER_CHECK_IN_MEMORY = 20;

/** The most checks (or agents) one statement carries. */
const MAX_BATCH = 1000;
