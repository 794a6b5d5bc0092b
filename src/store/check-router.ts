import type pg from 'pg';
import { WorkMeter } from '../engine/work-meter.ts';
import type { Candidates, Checker, CheckResolver, Explainer, ListingWalks } from '../engine/checker.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import { CachedChecker } from './cached-checker.ts';
import { GraphStatements, type GraphStatementOptions } from './graph-statements.ts';
import type { HeldTenants } from './held-tenants.ts';
import { MemoryChecker } from './memory-checker.ts';
import type { SchemaCache } from './schema-cache.ts';
import { SqlChecker } from './sql-checker.ts';
import { SqlListings } from './sql-listings.ts';

/**
 * The engine's Checker (docs/decisions.md#the-path-of-one-check), built as a chain: a check or a
 * listing walk of a tenant held in memory and current is answered there (MemoryChecker), which
 * hands the rest on: checks to the answers cached (CachedChecker) and then to PostgreSQL
 * (SqlChecker), listing walks and explanations to PostgreSQL (SqlListings). Listing candidates are always read
 * from PostgreSQL, where ids are in order. Each checker answers from one state of the tenant, and
 * an answer is never combined from two. The process's time on checks, in memory and in statements,
 * is one account (WorkMeter's CheckTimeShares).
 */
export class CheckRouter implements Checker {
  readonly checks: CheckResolver;
  readonly walks: ListingWalks;
  readonly candidates: Candidates;
  readonly explainer: Explainer;
  private readonly memory: MemoryChecker | null;
  private readonly cached: CachedChecker;

  constructor(
    /** The graph statements' pool (openGraphPool). */
    pool: pg.Pool,
    readonly schemas: SchemaCache,
    /** The tenants held in memory, which answer when current; null to always ask the database. */
    heldTenants: HeldTenants | null = null,
    {
      maxAgeMs,
      maxCachedAnswers,
      clock,
      wallClock = SYSTEM_CLOCK,
      checkBudget,
      walkMs,
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
    // One GraphStatements: a tenant's checks and listings share its part of the pool and of the time.
    const statements = new GraphStatements(pool, { ...sql, checkTime: meter.shares });
    const database = new SqlListings(statements, { checkBudget, clock: wallClock });
    this.cached = new CachedChecker(new SqlChecker(statements, { checkBudget, walkMs, clock: wallClock }), {
      maxAgeMs,
      maxEntries: maxCachedAnswers,
      clock,
      wallClock,
    });
    this.memory =
      heldTenants &&
      new MemoryChecker(heldTenants, meter, { checks: this.cached, walks: database, explainer: database }, { checkBudget, clock: wallClock });
    this.checks = this.memory ?? this.cached;
    this.walks = this.memory ?? database;
    this.explainer = this.memory ?? database;
    this.candidates = database;
  }

  invalidate(tenantId: string): void {
    this.cached.invalidate(tenantId);
    this.memory?.invalidate(tenantId);
  }
}
