import type { Logger } from 'pino';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import type { Db } from './db.ts';
import { startSweep } from './sweep.ts';

/**
 * Deletes, across tenants, the grants that expired `retentionMs` or more before `now`, at most
 * `limit` (docs/model.md#time-bound-grants): they confer nothing already, whatever their age, so
 * this only reclaims their room. Rows another transaction holds are left for the next sweep. The
 * grant log records the deletes, so that nodes holding a tenant in memory drop them too.
 */
export async function sweepExpiredGrants(db: Db, retentionMs: number, now: Date, limit = SWEEP_CHUNK): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionMs);
  return db.$executeRaw`
    DELETE FROM grants WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM grants WHERE expires_at <= ${cutoff} LIMIT ${limit} FOR UPDATE SKIP LOCKED))`;
}

/** Sweeps expired grants every `intervalMs` in the background (startSweep); returns what stops it. */
export function startExpiredGrantSweep(
  db: Db,
  { retentionMs, intervalMs = SWEEP_INTERVAL_MS, clock = SYSTEM_CLOCK }: { retentionMs: number; intervalMs?: number; clock?: WallClock },
  logger: Logger,
): () => void {
  return startSweep(
    { intervalMs, chunk: SWEEP_CHUNK, what: 'expired grants' },
    () => sweepExpiredGrants(db, retentionMs, new Date(clock.now())),
    logger,
  );
}

/** Grants one statement of the sweep deletes at most. */
const SWEEP_CHUNK = 1000;
/** How often a node sweeps: expired grants confer nothing meanwhile, so this only bounds how long they take room. */
const SWEEP_INTERVAL_MS = 60_000;
