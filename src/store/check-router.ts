import type pg from 'pg';
import { WorkMeter } from '../engine/work-meter.ts';
import type { CheckAnswer, Checker, HoldersQuery, ReachableQuery } from '../engine/engine.ts';
import type { Explanation } from '../engine/explain.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import type { Triple } from '../engine/refs.ts';
import type { CompiledSchema } from '../engine/schema.ts';
import { CachedChecker } from './cached-checker.ts';
import type { GraphStatementOptions } from './graph-statements.ts';
import type { HeldTenants } from './held-tenants.ts';
import { MemoryChecker } from './memory-checker.ts';
import type { SchemaCache } from './schema-cache.ts';
import { SqlChecker } from './sql-checker.ts';

/**
 * The engine's Checker (docs/decisions.md#the-path-of-one-check): a check or a listing walk of a
 * tenant held in memory and current is answered there (MemoryChecker); otherwise checks go to the
 * answers cached (CachedChecker) and then to PostgreSQL (SqlChecker), listing walks and explanations
 * to PostgreSQL. Listing candidates are always read from PostgreSQL, where ids are in order.
 * Each checker answers from one state of the tenant, and an answer is never combined from two.
 * The process's time on checks, in memory and in statements, is one account (WorkMeter's CheckTimeShares).
 */
export class CheckRouter implements Checker {
  private readonly memory: MemoryChecker | null;
  private readonly sql: SqlChecker;
  private readonly cached: CachedChecker;

  constructor(
    /** The graph statements' pool (openGraphPool). */
    pool: pg.Pool,
    private readonly schemas: SchemaCache,
    /** The tenants held in memory, which answer when current; null to always ask the database. */
    heldTenants: HeldTenants | null = null,
    {
      maxAgeMs,
      maxCachedAnswers,
      clock,
      wallClock = SYSTEM_CLOCK,
      checkBudget,
      meter = new WorkMeter(),
      ...sql
    }: {
      /** The process's work in memory and its time on checks (WorkMeter), shared with HeldTenants' replays. */
      meter?: WorkMeter;
      /** How long a cached answer is used (default: the freshness bound). */
      maxAgeMs?: number;
      maxCachedAnswers?: number;
      /** The answer cache's clock (tests move it). */
      clock?: { now(): number };
      /** The server's clock, which decides which grants are in force (docs/model.md#time-bound-grants). */
      wallClock?: WallClock;
      /** The most steps one check may take (GRANTD_CHECK_BUDGET), in memory and in the database. */
      checkBudget?: number | undefined;
      walkMs?: number;
    } & Omit<GraphStatementOptions, 'checkTime'> = {},
  ) {
    this.memory = heldTenants && new MemoryChecker(heldTenants, meter, { checkBudget, clock: wallClock });
    this.sql = new SqlChecker(pool, { ...sql, checkBudget, checkTime: meter.shares, clock: wallClock });
    this.cached = new CachedChecker(this.sql, { maxAgeMs, maxEntries: maxCachedAnswers, clock, wallClock });
  }

  schema(tenantId: string, options?: { maxAgeMs?: number }): Promise<CompiledSchema> {
    return this.schemas.get(tenantId, options);
  }

  schemaNow(tenantId: string): CompiledSchema | undefined {
    return this.schemas.getNow(tenantId);
  }

  checkNow(tenantId: string, schema: CompiledSchema, query: Triple): CheckAnswer | undefined {
    return this.memory?.checkNow(tenantId, schema, query);
  }

  async check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckAnswer[]> {
    return (await this.memory?.check(tenantId, schema, queries)) ?? this.cached.check(tenantId, schema, queries);
  }

  async reachable(tenantId: string, schema: CompiledSchema, query: ReachableQuery): Promise<string[] | null> {
    const inMemory = await this.memory?.reachable(tenantId, schema, query);
    return inMemory ? inMemory.ids : this.sql.reachable(tenantId, schema, query);
  }

  async holders(tenantId: string, schema: CompiledSchema, query: HoldersQuery): Promise<string[] | null> {
    const inMemory = await this.memory?.holders(tenantId, schema, query);
    return inMemory ? inMemory.ids : this.sql.holders(tenantId, schema, query);
  }

  subjectIds(tenantId: string, namespace: string, after: string | null, limit: number): Promise<string[]> {
    return this.sql.subjectIds(tenantId, namespace, after, limit);
  }

  async explain(tenantId: string, schema: CompiledSchema, query: Triple): Promise<Explanation> {
    return (await this.memory?.explain(tenantId, schema, query)) ?? this.sql.explain(tenantId, schema, query);
  }

  objectIds(tenantId: string, namespace: string, after: string | null, limit: number): Promise<string[]> {
    return this.sql.objectIds(tenantId, namespace, after, limit);
  }

  invalidate(tenantId: string): void {
    this.cached.invalidate(tenantId);
    this.memory?.invalidate(tenantId);
  }

  pairsPerCheck(tenantId: string): number {
    return this.memory?.holds(tenantId) ? this.memory.pairsPerCheck : this.sql.pairsPerCheck;
  }

  walkScale(tenantId: string): number {
    return this.memory?.holds(tenantId) ? this.memory.walkScale : 1;
  }
}
