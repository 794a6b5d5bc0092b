import { DomainError } from '../errors.ts';
import type { Checker } from './checker.ts';
import type { Triple } from './refs.ts';
import type { CompiledSchema } from './schema.ts';

/** One page of a listing: its ids, and whether more follow. */
export interface Page {
  ids: string[];
  more: boolean;
  /**
   * Set on a page of a relation with rules that its bound of work cut short: the last candidate it
   * checked, after which the next page starts (unset: after the page's last id).
   */
  checkedTo?: string;
}

/** Where the page after `page` starts (its cursor's position): after its last id, or after the last candidate a page cut short checked. */
export const nextAfter = (page: Page): string | undefined => page.checkedTo ?? page.ids.at(-1);

/** How a listing is paged: from after `after`, by its walk (null past the budget given), or its candidates in order and the check of one. */
export interface Listing {
  after: string | null;
  /** Its relation has rules: never walked (its holders are not a walk's pairs, which are a union), its candidates checked under RULED_PART and the page's bound. */
  ruled: boolean;
  walk(budget: number): Promise<string[] | null>;
  candidates(after: string | null, limit: number): Promise<string[]>;
  queryOf(id: string): Triple;
}

/** What a listing may walk: at first, and at most once candidates have shown the subject to be sparse in the namespace. */
export interface ListingBudgets {
  listingBudget: number;
  maxListingBudget: number;
}

/** Pages of listings (docs/checks-and-listings.md#what-a-page-costs): walked, or candidates checked in order. */
export class ListingPages {
  constructor(
    private readonly checker: Checker,
    private readonly budgets: ListingBudgets,
  ) {}

  /**
   * A page of `limit` ids (read with one more, which tells whether there is a next page), walked or
   * else scanned. A relation with rules is never walked: its candidates are checked, which is exact
   * (docs/model.md#listings).
   */
  async page(tenantId: string, schema: CompiledSchema, limit: number, listing: Listing): Promise<Page> {
    const first = this.budgets.listingBudget * this.checker.walks.walkScale(tenantId);
    const walked = listing.ruled ? null : await listing.walk(first);
    const { ids, checkedTo } = walked
      ? { ids: walked, checkedTo: undefined }
      : await this.scanCandidates(tenantId, schema, limit + 1, listing, first);
    if (checkedTo !== undefined) return { ids, more: true, checkedTo };
    return { ids: ids.slice(0, limit), more: ids.length > limit };
  }

  /**
   * A listing that reaches a lot: rather than walk everything, take the namespace's ids in order
   * after the cursor and check them in batches until the page is full. The cost follows the page and
   * how densely the listing reaches. The batches checked so far measure that density: one that
   * reaches few of many (10,000 of 1,000,000 documents) would need thousands of checks for a page,
   * so once the checks still to come would cost more than the first walk was allowed, it is walked
   * after all (once), with a budget about as costly as those checks.
   *
   * A relation with rules cannot be walked, and each of its checks may take up to a check's budget:
   * its candidates are checked RULED_PART at a time, and once their checks have taken more steps
   * than the most a listing walks (maxListingBudget), the page ends where it is, short, at the last
   * candidate checked (`checkedTo`), so that no page of it costs more than about that however
   * sparse or costly its candidates are.
   */
  private async scanCandidates(
    tenantId: string,
    schema: CompiledSchema,
    limit: number,
    listing: Listing,
    firstWalk: number,
  ): Promise<{ ids: string[]; checkedTo?: string }> {
    const { maxListingBudget } = this.budgets;
    const found: string[] = [];
    let after = listing.after;
    let checked = 0;
    let ruledSteps = 0;
    let walked = listing.ruled;
    for (let batch = Math.min(limit, FIRST_CANDIDATE_BATCH); found.length < limit; batch = Math.min(batch * 2, MAX_CANDIDATE_BATCH)) {
      const candidates = await listing.candidates(after, batch);
      for (let from = 0; from < candidates.length && found.length < limit;) {
        const part = listing.ruled ? candidates.slice(from, from + RULED_PART) : candidates;
        const response = await this.checker.checks.check(
          tenantId,
          schema,
          part.map((id) => listing.queryOf(id)),
        );
        part.forEach((id, i) => {
          const answer = response.answers[i]!;
          if (answer instanceof DomainError) throw answer;
          if (answer && found.length < limit) found.push(id);
        });
        from += part.length;
        ruledSteps += response.ruledSteps ?? 0;
        const namespaceDone = from === candidates.length && candidates.length < batch;
        if (ruledSteps > maxListingBudget && found.length < limit && !namespaceDone) return { ids: found, checkedTo: part.at(-1)! };
      }
      if (candidates.length < batch) break;
      after = candidates.at(-1)!;
      checked += candidates.length;
      const checksLeft = found.length > 0 ? ((limit - found.length) * checked) / found.length : Infinity;
      const pairsPerCheck = this.checker.walks.pairsPerCheck(tenantId);
      if (!walked && maxListingBudget > firstWalk && checksLeft * pairsPerCheck > firstWalk) {
        // At least twice the first walk: it reached further than that, and ids cluster, so the
        // density seen so far may flatter the scan.
        walked = true;
        const ids = await listing.walk(Math.floor(Math.min(maxListingBudget, Math.max(checksLeft * pairsPerCheck, 2 * firstWalk))));
        if (ids) return { ids };
      }
    }
    return { ids: found };
  }
}

/** The first batch of candidates: enough for a page of 100 from a subject that reaches densely. */
const FIRST_CANDIDATE_BATCH = 128;
/** The most candidates checked in one statement while paging through a namespace. */
const MAX_CANDIDATE_BATCH = 1000;
/** Candidates of a relation with rules checked in one call, between two looks at the page's steps. */
const RULED_PART = 16;
