// The client's iterators: the pages of a listing, following `next_cursor`, and the changes feed,
// polled for new changes once read to its end.
import type { Sleep } from './transport.ts';
import type { CallOptions, Change, ChangePage, ChangesQuery, FollowOptions } from './types.ts';

/** How long changes.follow waits before polling again at the end of the feed, by default. */
const FOLLOW_INTERVAL_MS = 1000;
/** The server's page size without `limit`. */
const DEFAULT_PAGE = 100;

/** Every page of a listing from `query.cursor` on, each fetched when the previous one is consumed. */
export async function* pages<Q extends { cursor?: string | undefined }, P extends { next_cursor: string | null }>(
  list: (query: Q, options?: CallOptions) => Promise<P>,
  query: Q,
  options: CallOptions | undefined,
): AsyncGenerator<P, void, undefined> {
  let cursor = query.cursor;
  for (;;) {
    const page = await list({ ...query, cursor }, options);
    yield page;
    if (page.next_cursor === null) return;
    cursor = page.next_cursor;
  }
}

/** Every change from `after` on, then each new one as it comes, until `signal` aborts (GrantdClient's changes.follow). */
export async function* followChanges(
  list: (query: ChangesQuery, options: CallOptions) => Promise<ChangePage>,
  sleep: Sleep,
  { after, limit, intervalMs = FOLLOW_INTERVAL_MS, signal, timeoutMs }: FollowOptions,
): AsyncGenerator<Change, void, undefined> {
  const stop = signal ?? new AbortController().signal;
  let position = after;
  while (!stop.aborted) {
    const page = await list(
      { ...(position === undefined ? {} : { after: position }), ...(limit === undefined ? {} : { limit }) },
      { ...(timeoutMs === undefined ? {} : { timeoutMs }) },
    );
    for (const change of page.changes) {
      if (stop.aborted) return;
      yield change;
    }
    position = page.next_revision;
    // A full page: more may wait; else the feed is read to its end for now.
    if (page.changes.length < (limit ?? DEFAULT_PAGE)) await sleep(intervalMs, stop).catch(() => undefined);
  }
}
