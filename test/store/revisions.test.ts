import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { Freshness } from '../../src/store/freshness.ts';
import { applyBatch, createGrant, deleteGrant } from '../../src/store/grants.ts';
import {
  ChangesExpired,
  currentSnapshot,
  type ChangeRow,
  finishedIn,
  readChanges,
  recordingWrites,
  sweepChanges,
  type Position,
} from '../../src/store/revisions.ts';
import { databaseUrl, newTenant, useServices } from '../helpers.ts';

/** The feed's triggers, positions and retention on the real database (docs/consistency.md#the-changes-feed). */
const services = useServices({ graphMemory: 0 });
const grant = (object: string) => ({ subject: { ns: 'user', id: 'a' }, relation: 'viewer', object: { ns: 'doc', id: object } });

/** The tenant's changes after `after`, once `count` are served (a transaction open elsewhere holds the feed back). */
async function changesOf(tenantId: string, after: Position | null, count: number) {
  let read = await readChanges(services.pool, tenantId, after, 1000);
  await expect
    .poll(
      async () => {
        read = await readChanges(services.pool, tenantId, after, 1000);
        return read!.changes.length;
      },
      { timeout: 10_000, interval: 50 },
    )
    .toBeGreaterThanOrEqual(count);
  return read!;
}

describe('the changes feed', () => {
  it("records a write in its transaction with the actor the request named, and names the write's revision", async () => {
    const { id } = await newTenant(services);
    const { next: start } = await changesOf(id, null, 3);
    await services.db.namespace.create({ data: { tenantId: id, name: 'doc' } });
    const { result, revision } = recordingWrites({ key_id: 'key_test' }, () => createGrant(services.db, id, grant('1')));
    await result;
    const written = revision();
    expect(written).not.toBeNull();
    const { changes } = await changesOf(id, start, 2);
    expect(changes.map((c) => [c.kind, c.op, c.actor])).toEqual([
      ['namespace', 'create', null],
      ['grant', 'create', { key_id: 'key_test' }],
    ]);
    expect(changes[1]!.position.xid).toBe(written!.xid);
    expect(changes[1]!.data).toMatchObject({ subject: 'user:a', relation: 'viewer', object: 'doc:1', not_before: null });
  });

  it("records each handler's actor though the scope is switched off between them, and none for a write outside one", async () => {
    const { id } = await newTenant(services);
    const { next: start } = await changesOf(id, null, 3);
    await services.db.namespace.create({ data: { tenantId: id, name: 'doc' } });
    await recordingWrites({ key_id: 'key_first' }, () => createGrant(services.db, id, grant('1'))).result;
    await recordingWrites({ key_id: 'key_second' }, () => createGrant(services.db, id, grant('2'))).result;
    await createGrant(services.db, id, grant('3'));
    const { changes } = await changesOf(id, start, 4);
    expect(changes.map((c) => c.actor)).toEqual([null, { key_id: 'key_first' }, { key_id: 'key_second' }, null]);
  });

  it('records nothing of a transaction rolled back', async () => {
    const { id } = await newTenant(services);
    const { next } = await changesOf(id, null, 3);
    await expect(
      services.db.$transaction(async (tx) => {
        await tx.namespace.create({ data: { tenantId: id, name: 'gone' } });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await services.db.namespace.create({ data: { tenantId: id, name: 'kept' } });
    expect((await changesOf(id, next, 1)).changes.map((c) => c.data.name)).toEqual(['kept']);
  });

  it('serves nothing at or past a transaction still open, so none can commit into what a reader passed', async () => {
    const { id } = await newTenant(services);
    const { next } = await changesOf(id, null, 3);
    const open = new pg.Client({ connectionString: databaseUrl() });
    await open.connect();
    try {
      await open.query('BEGIN');
      await open.query(`INSERT INTO agents (tenant_id, external_id, scope) VALUES ($1, 'early', '{}')`, [id]);
      const openXid = BigInt((await open.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')).rows[0]!.xid);
      // Committed after the open transaction began writing: its id is larger.
      // (Agents, not namespaces: a namespace write locks the tenant's row, which the open one holds.)
      await services.db.agent.create({ data: { tenantId: id, externalId: 'late', scope: [] } });
      const held = await readChanges(services.pool, id, next, 1000);
      expect(held!.changes).toEqual([]);
      // The position read up to stays below the open transaction.
      expect(held!.next.xid).toBeLessThan(openXid);
      await open.query('COMMIT');
    } finally {
      await open.end();
    }
    expect((await changesOf(id, next, 2)).changes.map((c) => c.data.external_id)).toEqual(['early', 'late']);
  });

  it("records a statement's rows in key order, and a deleted tenant's cascade not at all", async () => {
    const { id } = await newTenant(services);
    const { next } = await changesOf(id, null, 3);
    await services.db.namespace.create({ data: { tenantId: id, name: 'doc' } });
    await applyBatch(
      services.db,
      id,
      ['3', '1', '2'].map((object) => ({ ...grant(object), window: null })),
      [],
    );
    await deleteGrant(services.db, id, grant('2'));
    const { changes } = await changesOf(id, next, 5);
    expect(changes.map((c) => [c.kind, c.op, c.data.object ?? c.data.name])).toEqual([
      ['namespace', 'create', 'doc'],
      ['grant', 'create', 'doc:1'],
      ['grant', 'create', 'doc:2'],
      ['grant', 'create', 'doc:3'],
      ['grant', 'delete', 'doc:2'],
    ]);
    const recorded = () => services.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM changes WHERE tenant_id = ${id}::uuid`;
    const [before] = await recorded();
    await services.db.tenant.delete({ where: { id } });
    expect(await recorded()).toEqual([before]);
  });

  it('remembers the last position the retention sweep deleted: reading from before it is refused', async () => {
    const { id } = await newTenant(services);
    const { changes } = await changesOf(id, null, 3);
    await services.db.$executeRaw`UPDATE changes SET at = at - interval '8 days' WHERE tenant_id = ${id}::uuid AND seq = ${changes[0]!.position.seq}`;
    await sweepChanges(services.db, 7 * 86_400_000, new Date());
    await expect(readChanges(services.pool, id, changes[0]!.position, 10)).resolves.toMatchObject({
      changes: changes.slice(1).map(() => expect.anything()),
    });
    await expect(readChanges(services.pool, id, { xid: changes[0]!.position.xid, seq: 0n }, 10)).rejects.toBeInstanceOf(ChangesExpired);
    const tenant = await services.db.tenant.findUniqueOrThrow({ where: { id } });
    expect([tenant.changesPrunedXid, tenant.changesPrunedSeq]).toEqual([changes[0]!.position.xid, changes[0]!.position.seq]);
  });

  it('reads a statement of thousands of changes once each and in key order, from any position in it', async () => {
    const { id } = await newTenant(services);
    const { next } = await changesOf(id, null, 3);
    await services.db.namespace.create({ data: { tenantId: id, name: 'doc' } });
    const count = 2500;
    await services.db.$executeRaw`
      INSERT INTO grants (tenant_id, subject_ns, subject_id, relation, object_ns, object_id)
      SELECT ${id}::uuid, 'user', 'a', 'viewer', 'doc', lpad(n::text, 5, '0') FROM generate_series(1, ${count}) AS n`;
    await changesOf(id, next, 1000);
    const all: ChangeRow[] = [];
    for (let after = next; all.length < count + 1;) {
      const page = (await readChanges(services.pool, id, after, 1000))!;
      all.push(...page.changes);
      after = page.next;
    }
    all.shift(); // the namespace
    expect(all.map((change) => change.data.object)).toEqual(Array.from({ length: count }, (_, n) => `doc:${String(n + 1).padStart(5, '0')}`));
    // Pages of several sizes, from several positions, read the same sequence.
    for (const [from, limit] of [
      [0, 1000],
      [1023, 7],
      [1024, 1],
      [1500, 999],
    ] as const) {
      const page = await readChanges(services.pool, id, all[from]!.position, limit);
      expect(page!.changes.map((change) => change.data.object)).toEqual(all.slice(from + 1, from + 1 + limit).map((change) => change.data.object));
    }
  });
});

describe('Freshness', () => {
  it("drops the tenant's caches once for a revision, not again for one its snapshot had seen finished", async () => {
    const dropped: string[] = [];
    const freshness = new Freshness(services.db, (tenantId) => dropped.push(tenantId));
    const { xmin } = await currentSnapshot(services.db);
    expect(await freshness.reach('t1', xmin - 1n)).toBe(true);
    expect(await freshness.reach('t1', xmin - 1n)).toBe(false);
    expect(await freshness.reach('t2', xmin - 1n)).toBe(true);
    expect(await freshness.reach('t1', null)).toBe(true);
    expect(dropped).toEqual(['t1', 't2', 't1']);
  });

  it('answers 503 unavailable when the revision is not reached in time', async () => {
    const freshness = new Freshness(services.db, () => undefined, 100);
    const { xmax } = await currentSnapshot(services.db);
    // A transaction id not yet given out has not finished in any snapshot until it has been.
    await expect(freshness.reach('t1', xmax + 1_000_000n)).rejects.toMatchObject({ type: 'unavailable' });
  });

  it('tells from a snapshot whether a transaction had finished', () => {
    const snapshot = { xmin: 10n, xmax: 20n, running: new Set([12n]) };
    expect([9n, 10n, 12n, 13n, 20n].map((xid) => finishedIn(xid, snapshot))).toEqual([true, true, false, true, false]);
  });
});
