import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { GrantIndex, WINDOW_WEIGHT } from '../engine/grant-index.ts';
import { windowOf } from '../engine/grant-window.ts';
import { inSlices, type WorkMeter } from '../engine/work-meter.ts';
import { readCopiedGrants, type CopiedGrant } from './grant-copy.ts';
import { READ_ONLY_SNAPSHOT_SQL } from './graph-sql.ts';
import { grantsCopySql, LOAD_AGENTS_SQL, LOAD_COUNT_SQL, LOAD_HORIZON_SQL, LOAD_SEEN_SQL } from './load-sql.ts';

/** How a load's own connection shows in pg_stat_activity. */
export const LOAD_APPLICATION_NAME = 'grantd grant load';
/** How long a load's statements may take, the copy of all the tenant's grants among them. */
const LOAD_TIME_LIMIT_MS = 5 * 60_000;

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
 * grant log's horizon from the same snapshot. Each load has a connection of its own, which `close`
 * ends.
 */
export class TenantLoader {
  /** Connections of the loads under way, ended by `close`. */
  private readonly clients = new Set<pg.Client>();
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    /** The process's work in memory: indexing and compacting a load are its tenant's work, in slices. */
    private readonly meter: WorkMeter,
  ) {}

  /**
   * Reads the tenant unless more than `maxReplayedAhead` transactions above the horizon are in its
   * snapshot, or `admits` refuses what its grants and agents weigh (counted first, the names they
   * use left out), or they weigh more than `room` (the copy is given up there).
   */
  async read(tenantId: string, room: number, maxReplayedAhead: number, admits: (weight: number) => boolean): Promise<LoadOutcome> {
    const index = new GrantIndex();
    const client = this.connect();
    let horizon: string | undefined;
    let replayed: string[] = [];
    let agents = new Map<string, string[]>();
    try {
      await client.connect();
      await client.query(READ_ONLY_SNAPSHOT_SQL);
      const { rows } = await client.query<[string]>({ text: LOAD_HORIZON_SQL, values: [tenantId], rowMode: 'array' });
      horizon = rows[0]?.[0];
      if (horizon !== undefined) {
        // Transactions at or above the horizon that this snapshot sees are in what it reads.
        const seen = await client.query<[string]>({ text: LOAD_SEEN_SQL, values: [tenantId, horizon], rowMode: 'array' });
        replayed = seen.rows.map(([xid]) => xid);
        if (replayed.length > maxReplayedAhead) {
          await client.query('ROLLBACK');
          return { heldBack: replayed.length };
        }
        const agentRows = await client.query<[string, string[]]>({ text: LOAD_AGENTS_SQL, values: [tenantId], rowMode: 'array' });
        agents = new Map(agentRows.rows);
        const counted = await client.query<[number, number]>({ text: LOAD_COUNT_SQL, values: [tenantId], rowMode: 'array' });
        const [grants, windowed] = counted.rows[0]!;
        const weight = grants + WINDOW_WEIGHT * windowed + agents.size;
        if (!admits(weight)) {
          await client.query('ROLLBACK');
          return { notAdmitted: weight };
        }
        // The stream's chunks are indexed as the tenant's work, under the meter: requests go on between slices.
        const copied = client.query(copyTo(grantsCopySql(client.escapeLiteral(tenantId))));
        const take: CopiedGrant = (subjectNs, subjectId, relation, objectNs, objectId, notBefore, expiresAt) => {
          index.add({ subject: { ns: subjectNs, id: subjectId }, relation, object: { ns: objectNs, id: objectId } }, windowOf(notBefore, expiresAt));
          return index.footprint + agents.size <= room;
        };
        await this.meter.run(tenantId, (slice) => readCopiedGrants(copied, take, slice));
        // Past the room left, the copy was left unread: ending the connection ends it.
        if (index.footprint + agents.size > room) return { tooLarge: true };
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      this.clients.delete(client);
      await client.end().catch(() => undefined);
    }
    if (horizon === undefined || this.closed) return null;
    // The index is this load's alone until it is held: compacted in slices of the tenant's work, then held whole.
    await this.meter.run(tenantId, (slice) => inSlices(index.compacting(), slice));
    if (this.closed) return null;
    return { index, agents, horizon, replayed };
  }

  /** Ends the loads under way: their reads fail. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.clients].map((client) => client.end().catch(() => undefined)));
  }

  /**
   * A connection of the load's own: a large tenant takes seconds to read, which the pool's requests
   * should not wait for. The copy is one statement, as long as the indexing it waits for: the pool's
   * limits (10 s in the database, 15 s here) would end a large load on a busy machine, again at every retry.
   */
  private connect(): pg.Client {
    const client = new pg.Client({
      ...this.pool.options,
      application_name: LOAD_APPLICATION_NAME,
      statement_timeout: LOAD_TIME_LIMIT_MS,
      query_timeout: LOAD_TIME_LIMIT_MS,
    });
    // A lost connection also emits 'error', which would end the process unheard; the load's next query fails with it.
    client.on('error', () => undefined);
    this.clients.add(client);
    return client;
  }
}
