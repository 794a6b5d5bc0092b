import { TenantCache } from '../cache/tenant-cache.ts';
import { FRESHNESS_MS } from '../config.ts';
import type { CheckAnswer, CheckResolver, CheckResponse } from '../engine/checker.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import type { Triple } from '../engine/refs.ts';
import type { CompiledSchema } from '../engine/schema.ts';

/**
 * Whole check answers of its delegate (the database's, masks applied) kept per tenant for
 * `maxAgeMs`, so that a write on another node shows within that; this node's writes (`invalidate`)
 * make the tenant's answers unusable at once. Only answers are kept, never a refusal: a check
 * refused for its budget is refused again. An answer is stored with the tenant's generation taken
 * before it was asked, so one asked while this node wrote is never kept (TenantCache). Nor is an
 * answer kept past the tenant's next window boundary (docs/model.md#time-bound-grants): when a
 * grant's window opens or closes, the clock alone changes answers, with no write to invalidate them.
 */
export class CachedChecker implements CheckResolver {
  /**
   * Each answer with the instants (server's clock) between which it holds: from when it was asked
   * (a clock set back may go before a window boundary) until the tenant's next window boundary.
   */
  private readonly answers: TenantCache<{ allowed: boolean; asked: number; until: number }>;
  private readonly wallClock: WallClock;

  constructor(
    /** Asked what is not cached: SqlChecker, whose answers say until when they hold. */
    private readonly delegate: CheckResolver,
    {
      maxAgeMs = FRESHNESS_MS,
      maxEntries = 200_000,
      clock,
      wallClock = SYSTEM_CLOCK,
    }: {
      maxAgeMs?: number;
      maxEntries?: number;
      /** The cache's clock (tests move it). */
      clock?: { now(): number } | undefined;
      /** The server's clock, which the delegate's `until` is read against. */
      wallClock?: WallClock;
    } = {},
  ) {
    this.answers = new TenantCache({ maxAgeMs, maxEntries, clock });
    this.wallClock = wallClock;
  }

  invalidate(tenantId: string): void {
    this.answers.invalidate(tenantId);
  }

  /** Each query's answer, the ones not cached asked of the delegate together. */
  async check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckResponse> {
    const generation = this.answers.generation(tenantId);
    const answers = new Array<CheckAnswer>(queries.length);
    const missing: number[] = [];
    const now = this.wallClock.now();
    queries.forEach((query, i) => {
      const cached = this.answers.get(tenantId, answerKey(query));
      if (cached === undefined || now < cached.asked || cached.until <= now) missing.push(i);
      else answers[i] = cached.allowed;
    });
    if (missing.length === 0) return { answers };
    const asked = await this.delegate.check(
      tenantId,
      schema,
      missing.map((i) => queries[i]!),
    );
    missing.forEach((queryIndex, i) => {
      const answer = asked.answers[i]!;
      answers[queryIndex] = answer;
      if (typeof answer === 'boolean' && asked.until !== undefined)
        this.answers.set(tenantId, answerKey(queries[queryIndex]!), { allowed: answer, asked: now, until: asked.until }, generation);
    });
    return { answers, ruledSteps: asked.ruledSteps };
  }
}

/** Ids cannot hold NUL, so joining with it is unambiguous. */
const answerKey = (q: Triple): string => `${q.subject.ns}\0${q.subject.id}\0${q.relation}\0${q.object.ns}\0${q.object.id}`;
