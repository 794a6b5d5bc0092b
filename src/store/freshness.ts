import { setTimeout as sleep } from 'node:timers/promises';
import { LRUCache } from 'lru-cache';
import { RetryLater } from '../errors.ts';
import type { Db } from './db.ts';
import { currentSnapshot, finishedIn, type Snapshot } from './revisions.ts';

/**
 * What `Grantd-Consistency` asks of this process (docs/consistency.md#reading-at-a-revision): to
 * answer a tenant from a state that includes a revision's transaction, or (`full`) from a state at
 * least as new as the database when the request arrived. Every cache of the process (grants held in
 * memory, answers, definitions, keys) is brought there the way a write on this process brings it:
 * by `forget`, after which each loads afresh from a later state.
 *
 * For each tenant it remembers the snapshot taken right before the tenant's caches were last dropped
 * this way: what that snapshot had seen finished, every cache of the tenant holds already, so
 * requests carrying an older revision (or the same one again) cost nothing more. A newer revision
 * costs one query (the snapshot) and one reload of the tenant's caches.
 */
export class Freshness {
  private readonly reached = new LRUCache<string, Snapshot>({ max: 10_000 });

  constructor(
    private readonly db: Db,
    private readonly forget: (tenantId: string) => void,
    private readonly waitMs = MAX_WAIT_MS,
  ) {}

  /**
   * Brings the tenant's caches to a state including transaction `xid` (null: the database's state
   * now), waiting at most `waitMs` for it; true when they were dropped (reloaded from now on).
   */
  async reach(tenantId: string, xid: bigint | null): Promise<boolean> {
    if (xid === null) {
      this.forget(tenantId);
      return true;
    }
    const known = this.reached.get(tenantId);
    if (known && finishedIn(xid, known)) return false;
    const deadline = Date.now() + this.waitMs;
    for (;;) {
      const snapshot = await withDeadline(currentSnapshot(this.db), deadline, this.waitMs);
      if (finishedIn(xid, snapshot)) {
        this.forget(tenantId);
        this.reached.set(tenantId, snapshot);
        return true;
      }
      // Only a revision of a transaction still running (issued by a node whose clock of xids is
      // ahead of what this database has seen) gets here.
      if (Date.now() + POLL_MS >= deadline) throw notReached(this.waitMs);
      await sleep(POLL_MS);
    }
  }
}

const notReached = (waitMs: number) =>
  new RetryLater(`the revision asked for could not be reached within ${waitMs / 1000} s; retry shortly`, 'revision not reached');

async function withDeadline<T>(work: Promise<T>, deadline: number, waitMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(notReached(waitMs)), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** How long a read waits for its revision at most (docs/consistency.md). */
const MAX_WAIT_MS = 2000;
const POLL_MS = 20;
