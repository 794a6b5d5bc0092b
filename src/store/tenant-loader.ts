import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { GrantIndex, WINDOW_WEIGHT } from '../engine/grant-index.ts';
import { windowOf } from '../engine/grant-window.ts';
import { inSlices, type WorkMeter } from '../engine/work-meter.ts';
import { readCopiedGrants, type CopiedGrant } from './grant-copy.ts';
import { READ_ONLY_SNAPSHOT_SQL } from './graph-sql.ts';
import { grantsCopySql, LOAD_HEAD_SQL, type LoadHead } from './load-sql.ts';

/** How a load's own connection shows in pg_stat_activity: the process's id tells the nodes (and the workers of one) apart. */
export const LOAD_APPLICATION_NAME = `grantd grant load (pid ${process.pid})`;
/** How long a load's statements may take, the copy of all the tenant's grants among them. */
const LOAD_TIME_LIMIT_MS = 5 * 60_000;
/** A load's connection left idle this long is ended: loads come in bursts (a node starting, tenants newly checked). */
const LOAD_CONNECTION_IDLE_MS = 30_000;

/** A tenant as a load read it, from one snapshot: its grants indexed and compacted, its agents, how far the log is in it. */
export interface TenantRead {
  index: GrantIndex;
  agents: Map<string, string[]>;
  horizon: string;
  /** Transactions at or above the horizon whose changes the snapshot saw. */
  replayed: string[];
}

/**
 * What a load found: the tenant read; or more transactions above the horizon than a node replays
 * (`heldBack`, before a grant is read); or a weight `admits` refused (`notAdmitted`, before a grant
 * is read); or more grants than the room (`tooLarge`, the copy given up); or null when the tenant is
 * gone or the loader was closed.
 */
export type LoadOutcome = TenantRead | { heldBack: number } | { notAdmitted: number } | { tooLarge: true } | null;

/**
 * Reads a tenant's grants into a GrantIndex for HeldTenants: the grants by COPY (grant-copy.ts),
 * indexed as the tenant's work under the meter, then compacted in slices of it; its agents and the
 * grant log's horizon from the same snapshot.
 */
export class TenantLoader {
  /**
   * The loads' own connections, one a load under way: a large tenant takes seconds to read, which
   * the pool's requests should not wait for. The copy is one statement, as long as the indexing it
   * waits for: the pool's limits (10 s in the database, 15 s here) would end a large load on a busy
   * machine, again at every retry. They are kept between loads (a tenant's first checks start
   * hundreds of small loads, each of which a new connection would cost more than its grants).
   */
  private readonly connections: pg.Pool;
  /** Connections of the loads under way, ended by `close`. */
  private readonly reading = new Set<pg.PoolClient>();
  private closed = false;

  constructor(
    pool: pg.Pool,
    /** The process's work in memory: indexing and compacting a load are its tenant's work, in slices. */
    private readonly meter: WorkMeter,
    /** Loads under way at once, each on a connection of these. */
    loadsAtOnce: number,
  ) {
    this.connections = new pg.Pool({
      ...pool.options,
      max: loadsAtOnce,
      idleTimeoutMillis: LOAD_CONNECTION_IDLE_MS,
      application_name: LOAD_APPLICATION_NAME,
      statement_timeout: LOAD_TIME_LIMIT_MS,
      query_timeout: LOAD_TIME_LIMIT_MS,
    });
    // A connection lost while idle emits 'error' on the pool, which would end the process unheard; the pool drops it.
    this.connections.on('error', () => undefined);
  }

  /**
   * Reads the tenant unless more than `maxReplayedAhead` transactions above the horizon are in its
   * snapshot, or `admits` refuses what its grants and agents weigh (counted first, the names they
   * use left out), or they weigh more than `room` (the copy is given up there).
   */
  async read(tenantId: string, room: number, maxReplayedAhead: number, admits: (weight: number) => boolean): Promise<LoadOutcome> {
    const outcome = await this.copy(tenantId, room, maxReplayedAhead, admits);
    if (outcome === null || !('index' in outcome)) return outcome;
    if (this.closed) return null;
    // The index is this load's alone until it is held: compacted in slices of the tenant's work, then held whole.
    await this.meter.run(tenantId, (slice) => inSlices(outcome.index.compacting(), slice));
    return this.closed ? null : outcome;
  }

  /** Ends the loads under way (their reads fail) and the connections kept for the next. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.reading].map((client) => client.end().catch(() => undefined)));
    await this.connections.end();
  }

  /** `read` up to the index filled, on a connection of the loads' pool, which is kept for the next load when the transaction ended. */
  private async copy(tenantId: string, room: number, maxReplayedAhead: number, admits: (weight: number) => boolean): Promise<LoadOutcome> {
    const client = await this.connections.connect();
    this.reading.add(client);
    // A lost connection also emits 'error', which would end the process unheard; the load's next query fails with it.
    client.on('error', ignoreError);
    // Released with true (ended, not kept) unless the transaction ended cleanly: an abandoned copy is still streaming.
    let discard: Error | boolean = true;
    const ended = async (sql: 'COMMIT' | 'ROLLBACK') => {
      await client.query(sql);
      discard = false;
    };
    try {
      await client.query(READ_ONLY_SNAPSHOT_SQL);
      const head = (await client.query<LoadHead>({ text: LOAD_HEAD_SQL, values: [tenantId], rowMode: 'array' })).rows[0];
      if (head === undefined) return await ended('COMMIT').then(() => null);
      // Transactions at or above the horizon that this snapshot sees are in what it reads.
      const [horizon, replayed, agentPairs, grants, windowed] = head;
      if (replayed.length > maxReplayedAhead) return await ended('ROLLBACK').then(() => ({ heldBack: replayed.length }));
      const agents = new Map(agentPairs);
      const weight = grants + WINDOW_WEIGHT * windowed + agents.size;
      if (!admits(weight)) return await ended('ROLLBACK').then(() => ({ notAdmitted: weight }));
      // The stream's chunks are indexed as the tenant's work, under the meter: requests go on between slices.
      const index = new GrantIndex();
      const copied = client.query(copyTo(grantsCopySql(client.escapeLiteral(tenantId))));
      const take: CopiedGrant = (subjectNs, subjectId, relation, objectNs, objectId, notBefore, expiresAt) => {
        index.add({ subject: { ns: subjectNs, id: subjectId }, relation, object: { ns: objectNs, id: objectId } }, windowOf(notBefore, expiresAt));
        return index.footprint + agents.size <= room;
      };
      await this.meter.run(tenantId, (slice) => readCopiedGrants(copied, take, slice));
      // Past the room left, the copy was left unread: ending the connection ends it.
      if (index.footprint + agents.size > room) return { tooLarge: true };
      await ended('COMMIT');
      return { index, agents, horizon, replayed };
    } catch (error) {
      discard = error as Error;
      throw error;
    } finally {
      this.reading.delete(client);
      client.off('error', ignoreError);
      client.release(discard);
    }
  }
}

const ignoreError = (): void => undefined;
