import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from 'pino';
import type pg from 'pg';
import { offWhenIdle } from '../async-storage.ts';
import type { Db } from './db.ts';
import type { Prisma } from './prisma/client.ts';
import { startSweep } from './sweep.ts';

/**
 * Revisions and the changes feed (docs/consistency.md#revisions). A revision is a position in the
 * tenant's feed: a writing transaction's id (pg_current_xact_id, 64 bits) and an order within it.
 * Triggers write the feed in the writing transaction (prisma/functions/grantd_feed_*.sql); the API names the
 * actor of each transaction it runs and learns its id, both here, so that every write answers with
 * the revision that includes it.
 */

/** Who made a change: an API key, or an OAuth client (`sub`: the subject its token speaks for). */
export type Actor = { key_id: string } | { client_id: string; sub?: string };

/** A position in a tenant's feed: after every change of transactions below `xid`, and of `xid` up to `seq`. */
export interface Position {
  xid: bigint;
  seq: bigint;
}

/** The order of the last change of a transaction: a position past every change of it. */
export const END_OF_TRANSACTION = 2n ** 63n - 1n;

/** A request's writes: its actor, and the newest transaction it wrote in (null before any). */
interface Writing {
  actor: Actor;
  xid: bigint | null;
}

const writing = new AsyncLocalStorage<Writing>();
/** Runs a handler recording its writes; `writing` is off while none runs (docs/decisions.md#a-writes-actor-is-carried-only-while-a-write-runs). */
const whileRecording = offWhenIdle(writing);

/**
 * Runs `work` (a request's handler) so that each transaction it runs, until its promise settles,
 * names `actor` to the feed's triggers; `revision()` is then the newest of them as a position, or
 * null when it wrote nothing.
 */
export function recordingWrites<T>(actor: Actor, work: () => Promise<T>): { result: Promise<T>; revision: () => Position | null } {
  const scope: Writing = { actor, xid: null };
  const result = whileRecording(() => writing.run(scope, work));
  return { result, revision: () => (scope.xid === null ? null : { xid: scope.xid, seq: END_OF_TRANSACTION }) };
}

/**
 * First statement of a transaction run for a request that writes (store/transaction.ts): names its
 * actor for the triggers (transaction-local) and takes its id. An id taken first is still right for a
 * write that found nothing to change: every state in which it has finished includes what it read.
 */
export async function noteWrite(tx: Prisma.TransactionClient): Promise<void> {
  const scope = writing.getStore();
  if (!scope) return;
  const [row] = await tx.$queryRaw<{ xid: string }[]>`
    SELECT set_config('grantd.actor', ${JSON.stringify(scope.actor)}, true), pg_current_xact_id()::text AS xid`;
  const xid = BigInt(row!.xid);
  if (scope.xid === null || xid > scope.xid) scope.xid = xid;
}

/** A PostgreSQL snapshot (pg_current_snapshot): every transaction below xmin had finished, none from xmax on had begun. */
export interface Snapshot {
  xmin: bigint;
  xmax: bigint;
  running: Set<bigint>;
}

/** Whether transaction `xid` had finished (committed or not) when the snapshot was taken. */
export function finishedIn(xid: bigint, snapshot: Snapshot): boolean {
  return xid < snapshot.xmin || (xid < snapshot.xmax && !snapshot.running.has(xid));
}

/** The database's snapshot now. */
export async function currentSnapshot(db: Db): Promise<Snapshot> {
  const [row] = await db.$queryRaw<{ snapshot: string }[]>`SELECT pg_current_snapshot()::text AS snapshot`;
  return parseSnapshot(row!.snapshot);
}

/** A snapshot from its text (`xmin:xmax:running,...`). */
export function parseSnapshot(text: string): Snapshot {
  const [xmin, xmax, running] = text.split(':') as [string, string, string];
  return { xmin: BigInt(xmin), xmax: BigInt(xmax), running: new Set(running ? running.split(',').map(BigInt) : []) };
}

/** One change of the feed as the API shows it (without its revision, which the HTTP layer signs). */
export interface ChangeRow {
  position: Position;
  at: Date;
  kind: string;
  op: string;
  data: Record<string, unknown>;
  actor: Actor | null;
}

/** What the tenant has pruned: an `after` below this position is gone (410 changes-expired). */
export class ChangesExpired extends Error {}

/**
 * The tenant's changes after `after` (null: from the oldest kept), at most `limit`, in commit order,
 * and the position the page reaches. Only transactions below the horizon are served
 * (prisma/functions/grantd_xid_horizon.sql: the oldest transaction running in the reading
 * snapshot not known to be another database's): they have all finished, so none can commit later
 * into what a reader has already passed. With no more changes, `next` is the last position below
 * the horizon (or `after`, when it is further).
 * Changes of the `hidden` kinds are passed over as if absent: a page is filled with the others, and
 * `next` still moves past the hidden ones.
 */
export async function readChanges(
  pool: pg.Pool,
  tenantId: string,
  after: Position | null,
  limit: number,
  hidden: readonly string[] = [],
): Promise<{ changes: ChangeRow[]; next: Position } | null> {
  const from = after ?? { xid: 0n, seq: 0n };
  const { rows } = await pool.query<ChangesPageRow>({
    name: 'grantd_read_changes',
    text: READ_CHANGES_SQL,
    values: [tenantId, from.xid.toString(), from.seq.toString(), hidden, limit],
    rowMode: 'array',
  });
  const [first] = rows;
  if (!first) return null; // the tenant is gone
  const [horizon, prunedXid, prunedSeq] = [BigInt(first[0]), BigInt(first[1]), BigInt(first[2])];
  if (after !== null && before(after, { xid: prunedXid, seq: prunedSeq })) throw new ChangesExpired();
  const changes: ChangeRow[] = [];
  for (const [, , , xid, seq, at, kind, op, data, actor] of rows) {
    if (xid !== null) changes.push({ position: { xid: BigInt(xid), seq: BigInt(seq!) }, at: at!, kind: kind!, op: op!, data: data!, actor });
  }
  const last = changes.at(-1)?.position;
  const reached: Position = { xid: horizon - 1n, seq: END_OF_TRANSACTION };
  const next = changes.length === limit ? last! : before(from, reached) ? reached : from;
  return { changes, next };
}

/**
 * A page of the feed, with the horizon and the tenant's pruned position (one row with null changes
 * when there are none; no row when the tenant is gone). A named statement on the pool under Prisma:
 * Prisma's raw query took 2-3 times the CPU for a page of 1,000 (docs/decisions.md#the-feed-is-read-past-prisma).
 * $1 tenant, $2 and $3 the position after which to read (xid, seq), $4 the kinds passed over, $5 the limit.
 */
const READ_CHANGES_SQL = `WITH h AS (SELECT grantd_xid_horizon() AS horizon)
SELECT h.horizon, t.changes_pruned_xid, t.changes_pruned_seq, c.xid, c.seq, c.at, c.kind, c.op, c.data, c.actor
FROM tenants t CROSS JOIN h
LEFT JOIN LATERAL (
  SELECT * FROM changes c
  WHERE c.tenant_id = t.id AND (c.xid, c.seq) > ($2::bigint, $3::bigint) AND c.xid < h.horizon
    AND c.kind <> ALL($4::text[])
  ORDER BY c.xid, c.seq LIMIT $5
) c ON true
WHERE t.id = $1::uuid
ORDER BY c.xid, c.seq`;

/** READ_CHANGES_SQL's columns: 64-bit integers as pg gives them, as text. */
type ChangesPageRow = [
  horizon: string,
  prunedXid: string,
  prunedSeq: string,
  xid: string | null,
  seq: string | null,
  at: Date | null,
  kind: string | null,
  op: string | null,
  data: Record<string, unknown> | null,
  actor: Actor | null,
];

const before = (a: Position, b: Position): boolean => a.xid < b.xid || (a.xid === b.xid && a.seq < b.seq);

/**
 * Deletes changes recorded `retentionMs` or more before `now`, at most `limit`, and records for each
 * tenant the last position deleted, below which `after` is answered 410 rather than with a gap.
 */
export async function sweepChanges(db: Db, retentionMs: number, now: Date, limit = SWEEP_CHUNK): Promise<number> {
  const cutoff = new Date(now.getTime() - retentionMs);
  const [row] = await db.$queryRaw<{ deleted: bigint }[]>`
    WITH gone AS (
      DELETE FROM changes WHERE ctid = ANY(ARRAY(SELECT ctid FROM changes WHERE at < ${cutoff} LIMIT ${limit}))
      RETURNING tenant_id, xid, seq),
    last AS (SELECT DISTINCT ON (tenant_id) tenant_id, xid, seq FROM gone ORDER BY tenant_id, xid DESC, seq DESC),
    moved AS (
      UPDATE tenants t SET changes_pruned_xid = last.xid, changes_pruned_seq = last.seq FROM last
      WHERE t.id = last.tenant_id AND (last.xid, last.seq) > (t.changes_pruned_xid, t.changes_pruned_seq))
    SELECT count(*) AS deleted FROM gone`;
  return Number(row!.deleted);
}

/** Sweeps changes past their retention every `intervalMs` in the background (startSweep); returns what stops it. */
export function startChangesSweep(
  db: Db,
  { retentionMs, intervalMs = SWEEP_INTERVAL_MS }: { retentionMs: number; intervalMs?: number },
  logger: Logger,
): () => void {
  return startSweep(
    { intervalMs, chunk: SWEEP_CHUNK, what: 'changes past their retention' },
    () => sweepChanges(db, retentionMs, new Date()),
    logger,
  );
}

const SWEEP_CHUNK = 5000;
const SWEEP_INTERVAL_MS = 60_000;
