import { TenantCache } from '../cache/tenant-cache.ts';
import { FRESHNESS_MS } from '../config.ts';
import type { CheckAnswer, Checker } from '../engine/engine.ts';
import type { Triple } from '../engine/refs.ts';
import type { CompiledSchema } from '../engine/schema.ts';

/**
 * Whole check answers of another checker (the database's, masks applied) kept per tenant for
 * `maxAgeMs`, so that a write on another node shows within that; this node's writes (`invalidate`)
 * make the tenant's answers unusable at once. Only answers are kept, never a refusal: a check
 * refused for its budget is refused again. An answer is stored with the tenant's generation taken
 * before it was asked, so one asked while this node wrote is never kept (TenantCache).
 */
export class CachedChecker {
  private readonly answers: TenantCache<boolean>;

  constructor(
    private readonly uncached: Pick<Checker, 'check'>,
    {
      maxAgeMs = FRESHNESS_MS,
      maxEntries = 200_000,
      clock,
    }: {
      maxAgeMs?: number;
      maxEntries?: number;
      /** The cache's clock (tests move it). */
      clock?: { now(): number } | undefined;
    } = {},
  ) {
    this.answers = new TenantCache({ maxAgeMs, maxEntries, clock });
  }

  invalidate(tenantId: string): void {
    this.answers.invalidate(tenantId);
  }

  /** Each query's answer, the ones not cached asked of the other checker together. */
  async check(tenantId: string, schema: CompiledSchema, queries: readonly Triple[]): Promise<CheckAnswer[]> {
    const generation = this.answers.generation(tenantId);
    const answers = new Array<CheckAnswer>(queries.length);
    const missing: number[] = [];
    queries.forEach((query, i) => {
      const cached = this.answers.get(tenantId, answerKey(query));
      if (cached === undefined) missing.push(i);
      else answers[i] = cached;
    });
    if (missing.length > 0) {
      const asked = await this.uncached.check(
        tenantId,
        schema,
        missing.map((i) => queries[i]!),
      );
      missing.forEach((queryIndex, i) => {
        const answer = asked[i]!;
        answers[queryIndex] = answer;
        if (typeof answer === 'boolean') this.answers.set(tenantId, answerKey(queries[queryIndex]!), answer, generation);
      });
    }
    return answers;
  }
}

/** Ids cannot hold NUL, so joining with it is unambiguous. */
const answerKey = (q: Triple): string => `${q.subject.ns}\0${q.subject.id}\0${q.relation}\0${q.object.ns}\0${q.object.id}`;
