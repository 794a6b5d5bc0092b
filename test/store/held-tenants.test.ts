import pg from 'pg';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { WorkMeter } from '../../src/engine/work-meter.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { applyBatch, createGrant, deleteGrant } from '../../src/store/grants.ts';
import { connect } from '../../src/store/db.ts';
import { HeldTenants, type HeldTenant } from '../../src/store/held-tenants.ts';
import { LOAD_APPLICATION_NAME, type TenantLoader } from '../../src/store/tenant-loader.ts';
import { CheckRouter } from '../../src/store/check-router.ts';
import { databaseUrl, useServices } from '../helpers.ts';
import { DOCUMENT_RELATIONS } from '../engine/fixtures.ts';
import { tenantGraph } from '../engine/tenant-graph.ts';
import type { TenantRegistry } from '../../src/store/tenant-registry.ts';

/**
 * Grants held in memory (src/store/held-tenants.ts) follow the grant log that triggers write.
 * Each test holds its own services, so that `heldTenants.size` counts only its tenant's grants.
 */
const writer = useServices({ graphMemory: 0 });

/** Every check of `subject` as a viewer of the documents, answered without cached answers. */
const answers = (services: AppDeps, tenantId: string, subject: string, ids: string[]) => answersAs(services, tenantId, subject, 'viewer', ids);

/** Every check of `subject` holding `relation` on the documents, answered without cached answers. */
const answersAs = (services: AppDeps, tenantId: string, subject: string, relation: string, ids: string[]) =>
  new AuthorizationEngine(services.engine.checker)
    .checkBulk(
      tenantId,
      ids.map((id) => ({ subject, relation, object: `document:${id}` })),
    )
    .then((results) => results.map((r) => r.allowed));

const grantCount = (tenantId: string) => writer.db.grant.count({ where: { tenantId } });

async function documentsTenant(services: AppDeps) {
  const g = await tenantGraph(services);
  await g.namespace('document', DOCUMENT_RELATIONS);
  await g.namespace('group');
  return g;
}

describe('grants in memory', () => {
  const holder = useServices();

  it('follow every kind of write made on the same node at once', async () => {
    const g = await documentsTenant(holder);
    await g.grant(['user:ann', 'owner', 'document:d1'], ['user:ann', 'member', 'group:eng'], ['group:eng', 'viewer', 'document:d2']);
    expect(holder.engine.checker.walks.pairsPerCheck(g.tenantId)).toBe(6);
    expect(await holder.heldTenants.load(g.tenantId)).toBe(true);
    expect(holder.heldTenants.size).toBe(3);
    // Listings weigh a check as about six walked pairs in the database, and twenty in memory.
    expect(holder.engine.checker.walks.pairsPerCheck(g.tenantId)).toBe(20);

    const triple = (s: string, r: string, o: string) => ({ subject: parseRef(s, 'subject'), relation: r, object: parseRef(o, 'object') });
    await createGrant(holder.db, g.tenantId, triple('user:ann', 'editor', 'document:d3'));
    holder.engine.invalidate(g.tenantId);
    expect(await answers(holder, g.tenantId, 'user:ann', ['d1', 'd2', 'd3'])).toEqual([true, true, true]);

    await g.revoke(['user:ann', 'member', 'group:eng']);
    await deleteGrant(holder.db, g.tenantId, triple('user:ann', 'owner', 'document:d1'));
    holder.engine.invalidate(g.tenantId);
    expect(await answers(holder, g.tenantId, 'user:ann', ['d1', 'd2', 'd3'])).toEqual([false, false, true]);

    await g.agent('bot', ['*:*']);
    await g.grant(['agent:bot', 'member', 'user:ann'], ['agent:bot', 'viewer', 'document:d1']);
    expect(await answers(holder, g.tenantId, 'agent:bot', ['d1', 'd2', 'd3'])).toEqual([true, false, true]);
    expect(await g.kill('bot')).toBe(2);
    expect(await answers(holder, g.tenantId, 'agent:bot', ['d1', 'd2', 'd3'])).toEqual([false, false, false]);

    // The log was replayed, not reloaded around: the index holds exactly the tenant's grants.
    expect(holder.heldTenants.size).toBe(await grantCount(g.tenantId));
  });
});

describe('a lone check of grants in memory', () => {
  const holder = useServices();

  it('is answered at once while they are current, and not before they catch up with a write of this node', async () => {
    const g = await documentsTenant(holder);
    await g.grant(['user:ann', 'owner', 'document:d1'], ['user:ann', 'member', 'group:eng'], ['group:eng', 'viewer', 'document:d2']);
    // Date's clock (which the held tenants read) stands still from before the load, whose start a held
    // tenant's age counts from: "current" is then decided by the writes alone, not by whether a busy
    // machine let 500 ms pass between two lines.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      expect(await holder.heldTenants.load(g.tenantId)).toBe(true);
      const { schemas, checks } = holder.engine.checker;
      const schema = await schemas.get(g.tenantId);
      const annViews = (id: string) => ({
        subject: parseRef('user:ann', 'subject'),
        relation: 'viewer',
        object: parseRef(`document:${id}`, 'object'),
      });
      // Each at the start of a turn of the event loop: a check is answered at once only in a turn with
      // time left (docs/decisions.md#one-meter-for-all-work-in-memory), and the load's or catch-up's
      // slices may have spent this one.
      const atOnce = async (id: string) => {
        await new Promise((resolve) => setImmediate(resolve));
        return checks.checkNow!(g.tenantId, schema, annViews(id));
      };
      expect([await atOnce('d1'), await atOnce('d2'), await atOnce('d3')]).toEqual([true, true, false]);

      await createGrant(holder.db, g.tenantId, annViews('d3'));
      holder.engine.invalidate(g.tenantId);
      expect(await atOnce('d3')).toBeUndefined();
      expect(await holder.engine.check(g.tenantId, { subject: 'user:ann', relation: 'viewer', object: 'document:d3' })).toBe(true);
      expect(await atOnce('d3')).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('grants in memory while an older transaction stays open', () => {
  const holder = useServices();

  it('replay each change once, however often the log is read past it', async () => {
    const g = await documentsTenant(holder);
    expect(await holder.heldTenants.load(g.tenantId)).toBe(true);
    // A transaction with an id, left open: the horizon cannot pass it, so every read sees the writes below.
    const open = new pg.Client({ connectionString: databaseUrl() });
    await open.connect();
    try {
      await open.query('BEGIN');
      await open.query('SELECT pg_current_xact_id()');
      await g.grant(['user:ann', 'owner', 'document:d1']);
      expect(await answers(holder, g.tenantId, 'user:ann', ['d1', 'd2'])).toEqual([true, false]);
      await g.grant(['user:ann', 'owner', 'document:d2']);
      expect(await answers(holder, g.tenantId, 'user:ann', ['d1', 'd2'])).toEqual([true, true]);
      // Past the 500 ms a catch-up is trusted, on Date's clock (which the graphs read), without waiting for it.
      vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 600 });
      expect(await answers(holder, g.tenantId, 'user:ann', ['d1', 'd2'])).toEqual([true, true]);
      expect(holder.heldTenants.size).toBe(2);
    } finally {
      vi.useRealTimers();
      await open.query('ROLLBACK');
      await open.end();
    }
  });
});

describe('grants in memory under concurrent writers on two nodes', () => {
  const holder = useServices();

  it('end equal to the database, whatever order the writes commit in', async () => {
    const g = await documentsTenant(holder);
    expect(await holder.heldTenants.load(g.tenantId)).toBe(true);
    const users = ['u0', 'u1', 'u2', 'u3', 'u4'];
    const docs = Array.from({ length: 10 }, (_, i) => `d${i}`);
    let seed = 7;
    const next = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31), seed % n);
    const worker = async (w: number) => {
      for (let i = 0; i < 40; i++) {
        const triple: [string, string, string] = [`user:${users[next(users.length)]}`, 'owner', `document:${docs[next(docs.length)]}`];
        const node = w % 2 === 0 ? holder : writer;
        const parsed = await node.engine.parseTriples(g.tenantId, [{ subject: triple[0], relation: triple[1], object: triple[2] }], true);
        if (next(2) === 0) await applyBatch(node.db, g.tenantId, parsed, []);
        else await applyBatch(node.db, g.tenantId, [], parsed);
        node.engine.invalidate(g.tenantId);
        await answers(holder, g.tenantId, triple[0], docs);
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map(worker));

    holder.engine.invalidate(g.tenantId);
    for (const user of users) {
      expect(await answers(holder, g.tenantId, `user:${user}`, docs)).toEqual(await answers(writer, g.tenantId, `user:${user}`, docs));
    }
    expect(holder.heldTenants.holds(g.tenantId)).toBe(true);
    expect(holder.heldTenants.size).toBe(await grantCount(g.tenantId));
  });
});

describe('grants in memory on another node', () => {
  const follower = useServices();

  it('show its writes within a second, without a reload', async () => {
    const g = await documentsTenant(writer);
    await g.grant(['user:ann', 'owner', 'document:d1']);
    expect(await follower.heldTenants.load(g.tenantId)).toBe(true);
    expect(await answers(follower, g.tenantId, 'user:ann', ['d1', 'd2'])).toEqual([true, false]);

    await g.grant(['user:ann', 'viewer', 'document:d2']);
    await g.revoke(['user:ann', 'owner', 'document:d1']);
    await expect.poll(() => answers(follower, g.tenantId, 'user:ann', ['d1', 'd2']), { timeout: 1_000, interval: 20 }).toEqual([false, true]);
    expect(follower.heldTenants.size).toBe(1);
  });
});

describe('agents in memory on another node', () => {
  const follower = useServices();

  it('follow agents created, killed, created again and changed by hand there, within a second', async () => {
    const g = await documentsTenant(writer);
    await g.agent('bot', ['document:viewer']);
    await g.grant(['agent:bot', 'owner', 'document:d1']);
    expect(await follower.heldTenants.load(g.tenantId)).toBe(true);
    expect(follower.heldTenants.size).toBe(2); // a grant and an agent
    const held = await follower.heldTenants.current(g.tenantId);
    expect(held?.agents).toEqual(new Map([['bot', ['document:viewer']]]));

    const within = (relation: string, expected: boolean[]) =>
      expect.poll(() => answersAs(follower, g.tenantId, 'agent:bot', relation, ['d1', 'd2']), { timeout: 1_000, interval: 20 }).toEqual(expected);
    await within('viewer', [true, false]);
    await within('owner', [false, false]); // beyond its scope

    expect(await g.kill('bot')).toBe(1);
    await g.agent('bot', ['document:*']); // registered again, wider, but its grants died with it
    await within('viewer', [false, false]);
    await g.grant(['agent:bot', 'owner', 'document:d2']);
    await within('owner', [false, true]);

    await writer.db.agent.update({ where: { tenantId_externalId: { tenantId: g.tenantId, externalId: 'bot' } }, data: { scope: [] } });
    await within('owner', [false, false]);
    expect(follower.heldTenants.holds(g.tenantId)).toBe(true);
    expect(follower.heldTenants.size).toBe(2);
  });
});

describe('grants in memory whose log was pruned', () => {
  const follower = useServices();

  it('are loaded afresh, and answer right meanwhile', async () => {
    const g = await documentsTenant(writer);
    await g.grant(['user:ann', 'owner', 'document:d1']);
    expect(await follower.heldTenants.load(g.tenantId)).toBe(true);
    await g.grant(['user:ann', 'owner', 'document:d2']);
    await g.grant(['user:ann', 'owner', 'document:d3']);
    // As if the log had been pruned past everything: the follower cannot replay the two writes.
    await writer.db.tenant.update({ where: { id: g.tenantId }, data: { logPrunedBelow: 2n ** 62n } });

    follower.engine.invalidate(g.tenantId);
    expect(await answers(follower, g.tenantId, 'user:ann', ['d1', 'd2', 'd3'])).toEqual([true, true, true]);
    expect(await follower.heldTenants.load(g.tenantId)).toBe(true);
    expect(follower.heldTenants.size).toBe(3);
  });
});

describe('a tenant with more grants than a node holds', () => {
  const small = useServices({ graphMemory: 2 });

  it('is answered from the database', async () => {
    const g = await documentsTenant(small);
    await g.grant(['user:ann', 'owner', 'document:d1'], ['user:ann', 'owner', 'document:d2'], ['user:bob', 'owner', 'document:d3']);
    expect(await small.heldTenants.load(g.tenantId)).toBe(false);
    expect(small.heldTenants.size).toBe(0);
    expect(await answers(small, g.tenantId, 'user:ann', ['d1', 'd2', 'd3'])).toEqual([true, true, false]);
  });
});

describe('the grant log', () => {
  it("holds each writing statement's grants under its transaction, and drops what is below a checkpoint 5 minutes old", async () => {
    const g = await documentsTenant(writer);
    const logged = () => writer.db.grantChange.findMany({ where: { tenantId: g.tenantId }, orderBy: [{ xid: 'asc' }, { id: 'asc' }] });
    await g.grant(['user:ann', 'owner', 'document:d1'], ['user:bob', 'owner', 'document:d1']);
    await g.revoke(['user:ann', 'owner', 'document:d1'], ['user:nobody', 'owner', 'document:d1']);
    await g.revoke(['user:nobody', 'owner', 'document:d1']); // removes nothing: nothing logged
    const before = await logged();
    expect(before.map((c) => c.grants)).toEqual([
      expect.arrayContaining([
        ['user', 'ann', 'owner', 'document', 'd1'],
        ['user', 'bob', 'owner', 'document', 'd1'],
      ]),
      [['user', 'ann', 'owner', 'document', 'd1']],
    ]);
    expect(before[0]!.xid).toBeLessThan(before[1]!.xid);

    // A checkpoint taken 6 minutes ago above both writes: the next write drops them.
    const checkpoint = before[1]!.xid + 1n;
    await writer.db.tenant.update({
      where: { id: g.tenantId },
      data: { logCheckpointXid: checkpoint, logCheckpointAt: new Date(Date.now() - 6 * 60_000) },
    });
    await g.grant(['user:cat', 'owner', 'document:d1']);
    const after = await logged();
    expect(after.map((c) => c.grants)).toEqual([[['user', 'cat', 'owner', 'document', 'd1']]]);
    const tenant = await writer.db.tenant.findUniqueOrThrow({ where: { id: g.tenantId } });
    expect(tenant.logPrunedBelow).toBe(checkpoint);
    expect(tenant.logCheckpointXid).toBeGreaterThan(0n);
    expect(Date.now() - tenant.logCheckpointAt.getTime()).toBeLessThan(60_000);
    await expect(writer.db.$executeRaw`UPDATE grants SET subject_id = 'eve' WHERE tenant_id = ${g.tenantId}::uuid`).rejects.toThrow();
  });

  it('names the agents each statement created, deleted or updated', async () => {
    const g = await documentsTenant(writer);
    await g.agent('bot', ['*:*']);
    await g.grant(['agent:bot', 'owner', 'document:d1']);
    await writer.db.agent.updateMany({ where: { tenantId: g.tenantId }, data: { scope: [] } });
    // Refused, so nothing is logged: renamed, the agent would escape the log under its old name.
    await expect(writer.db.$executeRaw`UPDATE agents SET external_id = 'eve' WHERE tenant_id = ${g.tenantId}::uuid`).rejects.toThrow();
    await g.kill('bot');
    const logged = await writer.db.grantChange.findMany({ where: { tenantId: g.tenantId }, orderBy: [{ xid: 'asc' }, { id: 'asc' }] });
    expect(logged.map((c) => [c.agents, c.grants])).toEqual([
      [['bot'], null],
      [[], [['agent', 'bot', 'owner', 'document', 'd1']]],
      [['bot'], null],
      [['bot'], null],
      [[], [['agent', 'bot', 'owner', 'document', 'd1']]],
    ]);
  });
});

/** `count` grants (user:uN, viewer, document:dN) written straight to the table: a large tenant in one statement. */
const insertViewers = (pool: pg.Pool, tenantId: string, count: number) =>
  pool.query(
    `INSERT INTO grants (tenant_id, object_ns, object_id, relation, subject_ns, subject_id)
     SELECT $1::uuid, 'document', 'd' || i, 'viewer', 'user', 'u' || i FROM generate_series(1, $2::int) i`,
    [tenantId, count],
  );

describe('a load past the room', () => {
  it('is refused before a grant is read when its grants alone weigh more than the node holds', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    const copies = vi.spyOn(pg.Client.prototype, 'query');
    const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500 }, pino({ level: 'silent' }));
    try {
      const g = await documentsTenant(writer);
      await insertViewers(pool, g.tenantId, 20_000);
      expect(await heldTenants.load(g.tenantId)).toBe(false);
      expect(copies.mock.calls.some(([query]) => typeof query === 'object' && '_forward' in (query as object))).toBe(false);
    } finally {
      copies.mockRestore();
      await heldTenants.close();
      await close();
    }
  });

  it('stops reading once the names it uses take it past the room, ends its connection and leaves the tenant to the database', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    // 20,000 grants fit; with the 3 names they use (4 each), they do not.
    const heldTenants = new HeldTenants(pool, { maxGrants: 20_005, maxAgeMs: 500 }, pino({ level: 'silent' }));
    try {
      const g = await documentsTenant(writer);
      await insertViewers(pool, g.tenantId, 20_000);
      expect(await heldTenants.load(g.tenantId)).toBe(false);
      expect(heldTenants.holds(g.tenantId)).toBe(false);
      const loads = async () =>
        (
          await pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`,
            [LOAD_APPLICATION_NAME],
          )
        ).rows[0]!.n;
      await expect.poll(loads, { timeout: 5_000, interval: 20 }).toBe(0);
    } finally {
      await heldTenants.close();
      await close();
    }
  });

  it('is held whole when tenants dropped while it loaded made the room it lacked', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    const heldTenants = new HeldTenants(pool, { maxGrants: 40, maxAgeMs: 500 }, pino({ level: 'silent' }));
    const { held, loader } = heldTenants as unknown as { held: TenantRegistry; loader: TenantLoader };
    try {
      const [small, large] = [await documentsTenant(writer), await documentsTenant(writer)];
      await small.grant(['user:ann', 'owner', 'document:d0']); // 1 grant and 4 names: 17
      await large.grant(...Array.from({ length: 20 }, (_, k): [string, string, string] => ['user:ann', 'owner', `document:d${k}`])); // 20 counted, 36 held
      expect(await heldTenants.load(small.tenantId)).toBe(true);
      const read = loader.read.bind(loader);
      vi.spyOn(loader, 'read').mockImplementation(async (...args) => {
        const outcome = await read(...args); // admitted: 20 counted in the 23 left; the copy reads up to 40
        held.drop(small.tenantId, 'dropped'); // as if dropped while the large one loaded
        return outcome;
      });
      expect(await heldTenants.load(large.tenantId)).toBe(true);
      expect(heldTenants.size).toBe(20);
    } finally {
      await heldTenants.close();
      await close();
    }
  });
});

describe('a load longer than the pool allows a statement', () => {
  it('still reads the whole copy: its connection has limits of its own', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    // Limits no copy of 20,000 grants keeps to, in the database and in the client.
    const hasty = new pg.Pool({ connectionString: databaseUrl(), max: 1, statement_timeout: 1, query_timeout: 5 });
    const heldTenants = new HeldTenants(hasty, { maxGrants: 100_000, maxAgeMs: 500 }, pino({ level: 'silent' }));
    try {
      const g = await documentsTenant(writer);
      await insertViewers(pool, g.tenantId, 20_000);
      expect(await heldTenants.load(g.tenantId)).toBe(true);
      expect(heldTenants.size).toBe(20_000);
    } finally {
      await heldTenants.close();
      await hasty.end();
      await close();
    }
  });
});

describe('loads one after another', () => {
  it('read on one connection, kept between them (a new one a load would cost a small tenant more than its grants)', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500 }, pino({ level: 'silent' }));
    const loadBackends = async () =>
      (
        await pool.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()`, [
          LOAD_APPLICATION_NAME,
        ])
      ).rows.map(({ pid }) => pid);
    try {
      const tenants = [await documentsTenant(writer), await documentsTenant(writer), await documentsTenant(writer)];
      await tenants[0]!.grant(['user:ann', 'owner', 'document:d1']);
      await tenants[1]!.grant(['user:bob', 'owner', 'document:d2']);
      await insertViewers(pool, tenants[2]!.tenantId, 2_000);
      expect(await heldTenants.load(tenants[0]!.tenantId)).toBe(true);
      const kept = await loadBackends();
      expect(kept).toHaveLength(1);
      expect(await heldTenants.load(tenants[1]!.tenantId)).toBe(true);
      // Counted at 2,000, the third is refused before a grant is read: its transaction ended, the connection is kept too.
      expect(await heldTenants.load(tenants[2]!.tenantId)).toBe(false);
      expect(await loadBackends()).toEqual(kept);
      expect(heldTenants.size).toBe(2);
    } finally {
      await heldTenants.close();
      await close();
    }
  });
});

describe('a load whose connection is terminated', () => {
  const holder = useServices();

  it('falls back to the database instead of crashing the process', async () => {
    const g = await documentsTenant(holder);
    await g.grant(['user:ann', 'owner', 'document:d1']);
    // An exclusive lock on grants holds the load at its first read of them, connected, until its backend is terminated.
    const [locker, admin] = [new pg.Client({ connectionString: databaseUrl() }), new pg.Client({ connectionString: databaseUrl() })];
    await Promise.all([locker.connect(), admin.connect()]);
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE grants IN ACCESS EXCLUSIVE MODE');
      const loaded = holder.heldTenants.load(g.tenantId);
      const waitingLoad = async () =>
        (
          await admin.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database() AND wait_event_type = 'Lock'`,
            [LOAD_APPLICATION_NAME],
          )
        ).rows[0]?.pid;
      await expect.poll(waitingLoad, { timeout: 5_000, interval: 20 }).toBeDefined();
      const pid = await waitingLoad();
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(await loaded).toBe(false);
    } finally {
      await locker.query('ROLLBACK');
      await Promise.all([locker.end(), admin.end()]);
    }
    expect(holder.heldTenants.holds(g.tenantId)).toBe(false);
    expect(await answers(holder, g.tenantId, 'user:ann', ['d1', 'd2'])).toEqual([true, false]);
  });
});

describe('grants in memory beside a writing transaction left open', () => {
  it('are given up past a bound on the transactions replayed ahead of it, and held again once it ends', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500, maxReplayedAhead: 3 }, pino({ level: 'silent' }));
    const engine = new AuthorizationEngine(new CheckRouter(pool, writer.schemas, heldTenants));
    const open = new pg.Client({ connectionString: databaseUrl() });
    await open.connect();
    try {
      const g = await documentsTenant(writer);
      expect(await heldTenants.load(g.tenantId)).toBe(true);
      await open.query('BEGIN');
      await open.query('SELECT pg_current_xact_id()');
      const owns = async (ids: string[]) =>
        (
          await engine.checkBulk(
            g.tenantId,
            ids.map((id) => ({ subject: 'user:ann', relation: 'owner', object: `document:${id}` })),
          )
        ).map((r) => r.allowed);
      for (const id of ['d1', 'd2', 'd3']) await g.grant(['user:ann', 'owner', `document:${id}`]);
      engine.invalidate(g.tenantId);
      expect(await owns(['d1', 'd4'])).toEqual([true, false]);
      expect(heldTenants.holds(g.tenantId)).toBe(true); // three transactions replayed ahead: at the bound

      await g.grant(['user:ann', 'owner', 'document:d4']);
      engine.invalidate(g.tenantId);
      expect(await owns(['d1', 'd4'])).toEqual([true, true]);
      expect(heldTenants.holds(g.tenantId)).toBe(false);
      expect(await heldTenants.load(g.tenantId)).toBe(false); // refused before it reads a grant

      await open.query('ROLLBACK');
      await expect.poll(() => heldTenants.load(g.tenantId), { timeout: 5_000, interval: 20 }).toBe(true);
      expect(heldTenants.size).toBe(4);
    } finally {
      await open.end();
      await heldTenants.close();
      await close();
    }
  });
});

describe('listings of a tenant whose grants are held in memory', () => {
  it('walk the grants in memory, and the database only for a tenant not held', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500 }, pino({ level: 'silent' }));
    const engine = new AuthorizationEngine(new CheckRouter(pool, writer.schemas, heldTenants));
    // Graph statements run on a client of the pool.
    const statements = vi.spyOn(pg.Client.prototype, 'query');
    const walksInDatabase = () => statements.mock.calls.filter(([query]) => (query as { name?: string }).name === 'grantd_reachable').length;
    try {
      const g = await documentsTenant(writer);
      await g.grant(['user:ann', 'owner', 'document:d1'], ['user:ann', 'member', 'group:eng'], ['group:eng', 'viewer', 'document:d2']);
      const list = () => engine.listObjects(g.tenantId, { subject: 'user:ann', namespace: 'document', relation: 'viewer', after: null, limit: 10 });
      expect(await list()).toEqual({ ids: ['d1', 'd2'], more: false });
      expect(walksInDatabase()).toBe(1);

      expect(await heldTenants.load(g.tenantId)).toBe(true);
      expect(await list()).toEqual({ ids: ['d1', 'd2'], more: false });
      await g.revoke(['user:ann', 'member', 'group:eng']);
      engine.invalidate(g.tenantId);
      expect(await list()).toEqual({ ids: ['d1'], more: false });
      expect(walksInDatabase()).toBe(1);
    } finally {
      statements.mockRestore();
      await heldTenants.close();
      await close();
    }
  });
});

describe('grants in memory with more to replay than a catch-up replays', () => {
  /** Graphs over a pool of their own, replaying at most `maxLogGrants` grants a catch-up unless the tenant holds more; and how often they loaded. */
  function heldTenantsReplaying(maxLogGrants: number) {
    const { pool, close } = connect(databaseUrl(), 2);
    const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500, maxLogGrants }, pino({ level: 'silent' }));
    const loads = vi.spyOn(heldTenants as unknown as { loadNow: (tenantId: string) => Promise<void> }, 'loadNow');
    const engine = new AuthorizationEngine(new CheckRouter(pool, writer.schemas, heldTenants));
    const owns = async (tenantId: string, ids: string[]) =>
      (
        await engine.checkBulk(
          tenantId,
          ids.map((id) => ({ subject: 'user:ann', relation: 'owner', object: `document:${id}` })),
        )
      ).map((r) => r.allowed);
    return { heldTenants, engine, owns, loads: () => loads.mock.calls.length, close: async () => (await heldTenants.close(), await close()) };
  }
  const docs = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, k): [string, string, string] => ['user:ann', 'owner', `document:d${from + k}`]);

  it('replay as many grants as the tenant holds, and reload past that while the database answers', async () => {
    const { heldTenants, engine, owns, loads, close } = heldTenantsReplaying(2);
    try {
      const g = await documentsTenant(writer);
      await g.grant(...docs(0, 6));
      expect(await heldTenants.load(g.tenantId)).toBe(true);
      await g.grant(...docs(6, 10)); // 4 grants: past the bound of 2, not past the 6 held
      engine.invalidate(g.tenantId);
      expect(await owns(g.tenantId, ['d0', 'd9', 'd10'])).toEqual([true, true, false]);
      expect(heldTenants.holds(g.tenantId)).toBe(true);
      expect(loads()).toBe(1);

      await g.grant(...docs(10, 30)); // 20 grants, past the 10 held: reloaded
      engine.invalidate(g.tenantId);
      expect(await owns(g.tenantId, ['d0', 'd29', 'd30'])).toEqual([true, true, false]);
      expect(await heldTenants.load(g.tenantId)).toBe(true);
      expect(loads()).toBe(2);
      expect(heldTenants.size).toBe(30);
    } finally {
      await close();
    }
  });

  it('are reloaded by themselves when the log was pruned past them, whatever an earlier load left refused', async () => {
    const { heldTenants, engine, owns, loads, close } = heldTenantsReplaying(100_000);
    try {
      const g = await documentsTenant(writer);
      await g.grant(...docs(0, 2));
      expect(await heldTenants.load(g.tenantId)).toBe(true);
      // As if a load had failed a moment ago: that refusal no longer says anything of a tenant held since.
      (heldTenants as unknown as { held: TenantRegistry }).held.unheld.refuse(g.tenantId, 60_000);
      await g.grant(...docs(2, 3));
      await writer.db.tenant.update({ where: { id: g.tenantId }, data: { logPrunedBelow: 2n ** 62n } });
      engine.invalidate(g.tenantId);
      expect(await owns(g.tenantId, ['d0', 'd2', 'd3'])).toEqual([true, true, false]); // from the database
      await expect.poll(() => heldTenants.holds(g.tenantId), { timeout: 5_000, interval: 20 }).toBe(true);
      expect(loads()).toBe(2);
      expect(heldTenants.size).toBe(3);
    } finally {
      await close();
    }
  });
});

describe('a check of a tenant not held', () => {
  it('is answered by the database without waiting for a turn of the work meter; the second starts its load', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    const meter = new WorkMeter();
    const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500 }, pino({ level: 'silent' }), meter);
    const engine = new AuthorizationEngine(new CheckRouter(pool, writer.schemas, heldTenants, { meter }));
    const loads = vi.spyOn(heldTenants as unknown as { loadNow: (tenantId: string) => Promise<void> }, 'loadNow');
    // Until the tenant's load starts, the meter's turns never come (as when loads' units and many
    // runs fill them): only what waits for none answers.
    const run = meter.run.bind(meter);
    vi.spyOn(meter, 'run').mockImplementation((tenantId, work) =>
      loads.mock.calls.length === 0 ? new Promise(() => undefined) : run(tenantId, work),
    );
    try {
      const g = await documentsTenant(writer);
      await g.grant(['user:ann', 'owner', 'document:d0']);
      const check = () => engine.check(g.tenantId, { subject: 'user:ann', relation: 'owner', object: 'document:d0' });
      const waited = new Promise((resolve) => setTimeout(() => resolve('waited for the meter'), 2_000));
      expect(await Promise.race([check(), waited])).toBe(true);
      expect(loads).not.toHaveBeenCalled(); // one check says little of a tenant (docs/consistency.md#grants-held-in-memory)
      expect(await Promise.race([check(), waited])).toBe(true);
      expect(loads).toHaveBeenCalledWith(g.tenantId);
      await expect.poll(() => heldTenants.holds(g.tenantId), { timeout: 5_000, interval: 20 }).toBe(true);
    } finally {
      await heldTenants.close();
      await close();
    }
  });
});

describe('grants in memory with a backlog longer than a slice', () => {
  it('replay it a slice a turn of the event loop, answering nothing meanwhile, then equal the database', async () => {
    const { pool, close } = connect(databaseUrl(), 2);
    const meter = new WorkMeter();
    const heldTenants = new HeldTenants(pool, { maxGrants: 1_000, maxAgeMs: 500, replaySlice: 2 }, pino({ level: 'silent' }), meter);
    const engine = new AuthorizationEngine(new CheckRouter(pool, writer.schemas, heldTenants, { meter }));
    const charged = vi.spyOn(meter.shares, 'spent');
    try {
      const g = await documentsTenant(writer);
      await g.grant(['user:ann', 'owner', 'document:d0']);
      expect(await heldTenants.load(g.tenantId)).toBe(true);
      const flips = vi.spyOn((await heldTenants.current(g.tenantId))!.index, 'flip');
      const docs = Array.from({ length: 10 }, (_, k) => `d${k}`);
      await g.grant(...docs.slice(1).map((id): [string, string, string] => ['user:ann', 'owner', `document:${id}`]));
      await g.revoke(['user:ann', 'owner', 'document:d0']); // 10 flips in all
      heldTenants.invalidate(g.tenantId);

      expect(await heldTenants.current(g.tenantId)).toBeNull(); // its catch-up replays in slices
      const meanwhile = await new Promise<{ flipped: number; held: HeldTenant | null }>((resolve) =>
        setImmediate(() => void heldTenants.current(g.tenantId).then((held) => resolve({ flipped: flips.mock.calls.length, held }))),
      );
      expect(meanwhile.flipped).toBeGreaterThan(0);
      expect(meanwhile.flipped).toBeLessThan(10);
      expect(meanwhile.held).toBeNull();

      await expect.poll(() => heldTenants.current(g.tenantId), { timeout: 5_000, interval: 10 }).not.toBeNull();
      expect(flips).toHaveBeenCalledTimes(10);
      // The replay is the tenant's work under the meter: a slice charged for each of its 5 units at least.
      expect(charged.mock.calls.filter(([tenantId]) => tenantId === g.tenantId).length).toBeGreaterThanOrEqual(5);
      expect(heldTenants.size).toBe(await grantCount(g.tenantId));
      const owns = await engine.checkBulk(
        g.tenantId,
        docs.map((id) => ({ subject: 'user:ann', relation: 'owner', object: `document:${id}` })),
      );
      expect(owns.map((r) => r.allowed)).toEqual(docs.map((id) => id !== 'd0'));
    } finally {
      await heldTenants.close();
      await close();
    }
  });
});

describe('grants in memory on a clock the test moves', () => {
  /** Graphs over a pool of their own whose loads, catch-ups, refusals and idleness read `clock.at`; and how often they loaded. */
  /**
   * Graphs over a pool of their own whose loads, catch-ups, refusals, idleness and uses read
   * `clock.at`; how often they loaded; and what they logged at info (the policy's decisions).
   */
  function heldTenantsOnClock(maxGrants = 1_000, usesHalfLifeMs?: number) {
    const clock = { at: Date.now(), now: () => clock.at };
    const { pool, close } = connect(databaseUrl(), 2);
    const logged: { msg: string; tenantId: string; weight?: number; why?: string; by?: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as (typeof logged)[number]) });
    const heldTenants = new HeldTenants(pool, { maxGrants, maxAgeMs: 500, clock, ...(usesHalfLifeMs ? { usesHalfLifeMs } : {}) }, logger);
    const loads = vi.spyOn(heldTenants as unknown as { loadNow: (tenantId: string) => Promise<void> }, 'loadNow');
    return { clock, heldTenants, logged, loads: () => loads.mock.calls.length, close: async () => (await heldTenants.close(), await close()) };
  }

  /** Tenants of `counts[i]` owner grants each. */
  async function tenantsOf(...counts: number[]) {
    const made = [];
    for (const count of counts) {
      const g = await documentsTenant(writer);
      await g.grant(...Array.from({ length: count }, (_, k): [string, string, string] => ['user:ann', 'owner', `document:d${k}`]));
      made.push(g.tenantId);
    }
    return made;
  }

  /** What each tenant weighs against GRANTD_GRAPH_MEMORY, as a load logs it. */
  async function weights(tenantIds: string[]): Promise<number[]> {
    const { heldTenants, logged, close } = heldTenantsOnClock();
    try {
      for (const tenantId of tenantIds) expect(await heldTenants.load(tenantId)).toBe(true);
      return tenantIds.map(
        (tenantId) => logged.find((line) => line.tenantId === tenantId && line.msg === 'grants in memory: tenant loaded')!.weight!,
      );
    } finally {
      await close();
    }
  }

  /** `times` checks of the tenant as the check path makes them (each a use). */
  async function use(heldTenants: HeldTenants, tenantId: string, times: number) {
    for (let i = 0; i < times; i++) await heldTenants.current(tenantId);
  }

  it('answer for maxAgeMs after their last catch-up began, catching up ahead from half of it', async () => {
    const { clock, heldTenants, close } = heldTenantsOnClock();
    try {
      const g = await documentsTenant(writer);
      await g.grant(['user:ann', 'owner', 'document:d0']);
      expect(await heldTenants.load(g.tenantId)).toBe(true);
      await g.grant(['user:ann', 'owner', 'document:d1']); // as another node would: no invalidate
      clock.at += 249;
      expect(heldTenants.currentNow(g.tenantId)?.index.size).toBe(1); // fresh: answers as it is
      clock.at += 1;
      expect(heldTenants.currentNow(g.tenantId)?.index.size).toBe(1); // half its age: still answers, and catches up ahead
      await expect.poll(() => heldTenants.currentNow(g.tenantId)?.index.size, { timeout: 5_000, interval: 10 }).toBe(2);
      clock.at += 499;
      expect(heldTenants.currentNow(g.tenantId)).toBeDefined(); // the catch-up began 499 ms ago
      clock.at += 1;
      expect(heldTenants.currentNow(g.tenantId)).toBeUndefined(); // past its age: a check waits for a catch-up
      expect((await heldTenants.current(g.tenantId))?.index.size).toBe(2);
      expect(heldTenants.currentNow(g.tenantId)).toBeDefined();
    } finally {
      await close();
    }
  });

  it('refuse a tenant too large for ten minutes, then load it at the first check after', async () => {
    const { clock, heldTenants, loads, close } = heldTenantsOnClock(30);
    try {
      const g = await documentsTenant(writer);
      const docs = Array.from({ length: 40 }, (_, k): [string, string, string] => ['user:ann', 'owner', `document:d${k}`]);
      await g.grant(...docs);
      expect(await heldTenants.load(g.tenantId)).toBe(false);
      await g.revoke(...docs.slice(1)); // it would fit now
      clock.at += 10 * 60_000 - 1;
      expect(await heldTenants.current(g.tenantId)).toBeNull();
      expect(loads()).toBe(1); // still refused
      clock.at += 1;
      expect(await heldTenants.current(g.tenantId)).toBeNull(); // the database answers while it loads
      expect(loads()).toBe(2);
      await expect.poll(() => heldTenants.holds(g.tenantId), { timeout: 5_000, interval: 20 }).toBe(true);
    } finally {
      await close();
    }
  });

  it('make room of the tenants unused for ten minutes when another is loaded', async () => {
    const { clock, heldTenants, close } = heldTenantsOnClock();
    try {
      const [idle, used, next] = [await documentsTenant(writer), await documentsTenant(writer), await documentsTenant(writer)];
      for (const g of [idle, used, next]) await g.grant(['user:ann', 'owner', 'document:d0']);
      expect(await heldTenants.load(idle.tenantId)).toBe(true);
      expect(await heldTenants.load(used.tenantId)).toBe(true);
      clock.at += 10 * 60_000;
      expect(await heldTenants.current(used.tenantId)).not.toBeNull(); // a check, after a catch-up
      clock.at += 1;
      expect(await heldTenants.load(next.tenantId)).toBe(true);
      expect([idle, used, next].map((g) => heldTenants.holds(g.tenantId))).toEqual([false, true, true]);
    } finally {
      await close();
    }
  });

  it('hold the tenants used most for what they weigh: a big tenant seldom checked stays in the database until checked far more than a small one it displaces', async () => {
    const [a, b, big] = await tenantsOf(5, 5, 30);
    const [weightA, weightB, weightBig] = await weights([a!, b!, big!]);
    // Room for both small tenants and not the big one beside them: it fits once one of them goes.
    const { clock, heldTenants, logged, loads, close } = heldTenantsOnClock(weightA! + weightB! + weightBig! - 1, Infinity);
    try {
      for (const small of [a!, b!]) {
        await use(heldTenants, small, 1);
        expect(await heldTenants.load(small)).toBe(true); // the room left goes to whoever comes first
        await use(heldTenants, small, 9);
      }
      await use(heldTenants, big!, 1);
      expect(await heldTenants.load(big!)).toBe(false); // counted, then left out before a grant is read
      expect(logged.at(-1)).toMatchObject({ msg: 'grants in memory: tenant not held', tenantId: big, weight: weightBig });
      expect(loads()).toBe(3);

      clock.at += 1_000;
      await use(heldTenants, big!, 18); // 19 uses, then 20: not more than twice the 10 of the small tenant it would displace
      clock.at += 1_000;
      await use(heldTenants, big!, 1);
      expect(loads()).toBe(3); // decided in memory from what the big tenant weighed: no load tried

      clock.at += 1_000;
      await use(heldTenants, big!, 1); // 21 uses
      expect(loads()).toBe(4);
      await expect.poll(() => heldTenants.holds(big!), { timeout: 5_000, interval: 20 }).toBe(true);
      expect([a!, b!].map((small) => heldTenants.holds(small))).toEqual([false, true]);
      expect(logged).toContainEqual(expect.objectContaining({ msg: 'grants in memory: tenant dropped', tenantId: a, why: 'displaced', by: big }));
    } finally {
      await close();
    }
  });

  it('let a tenant no longer checked be displaced by one checked now, uses halving every half-life', async () => {
    const [old, now] = await tenantsOf(5, 5);
    const [weightOld, weightNow] = await weights([old!, now!]);
    const { clock, heldTenants, close } = heldTenantsOnClock(weightOld! + weightNow! - 1, 1_000);
    try {
      await use(heldTenants, old!, 1);
      expect(await heldTenants.load(old!)).toBe(true);
      await use(heldTenants, old!, 9);
      await use(heldTenants, now!, 3);
      expect(await heldTenants.load(now!)).toBe(false); // 3 uses against 10

      clock.at += 5_000; // the old tenant's 10 uses are 0.31 now, the other's 3 are 0.09
      await use(heldTenants, now!, 3); // 1.09 at the first, too few to displace a tenant: considered again in a second
      expect(heldTenants.holds(now!)).toBe(false);
      clock.at += 1_000;
      await use(heldTenants, now!, 1); // 2.55 against 0.16
      await expect.poll(() => heldTenants.holds(now!), { timeout: 5_000, interval: 20 }).toBe(true);
      expect(heldTenants.holds(old!)).toBe(false);
    } finally {
      await close();
    }
  });
});
