import fc from 'fast-check';
import type { KeyScope } from '../../contract/index.ts';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { forgetBefore } from '../../src/cluster/changes.ts';
import { inForce, sameWindow, windowOf, type GrantWindow } from '../../src/engine/grant-window.ts';
import type { RelationDefinitions } from '../../src/engine/schema.ts';
import { createApp } from '../../src/http/app.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { createKey } from '../../src/store/keys.ts';
import { client, useServices } from '../helpers.ts';
import { assertProperty, replayedCommands, scaled } from '../properties.ts';
import { disagreeing, queriesOn, referenceCheck, relationsArb, SCOPES, type Triple } from '../engine/reference.ts';
import { tenantGraph } from '../engine/tenant-graph.ts';

/**
 * A stateful model test (fast-check's commands): random sequences of grant writes (with and without
 * windows, one at a time and in batches), grant deletes, namespace changes, agents registered and
 * killed, API keys made (on an agent's authority too) and revoked, the server's clock moved back
 * and forth, and a node loading the tenant midway. The writes go through the HTTP API of one node,
 * as a client's would, and its announcements reach two other nodes as a cluster's would. After each
 * step every engine must answer every check as the reference evaluator (test/engine/reference.ts)
 * does on the model's state at the clock's instant: the writer, which holds the tenant in memory
 * (MemoryChecker: a bulk and each lone check), a node answering from PostgreSQL with its cache of
 * answers (CachedChecker over SqlChecker), and the node that loaded the tenant midway; listings of
 * objects and subjects are walked in memory and in PostgreSQL, and each key's check over HTTP is
 * answered, or refused with 401 once the key is revoked or its agent killed.
 */
const writer = useServices({ authFailureLimit: 1_000_000 });
const databaseOnly = useServices({ graphMemory: 0 });
const follower = useServices();
/** The writer's app, whose announcements reach the other two nodes (as a cluster's primary relays them). */
const app = createApp({
  ...writer,
  announce: async (change) => {
    await writer.announce(change);
    for (const node of [databaseOnly, follower]) forgetBefore(node, change);
  },
} satisfies AppDeps);

const IDS: Record<string, string[]> = {
  user: ['u0', 'u1'],
  agent: ['a0', 'a1'],
  team: ['t0'],
  folder: ['f0', 'f1'],
  doc: ['d0', 'd1'],
};
const REFS = Object.entries(IDS).flatMap(([ns, ids]) => ids.map((id) => `${ns}:${id}`));
/** What checks and grants of relations r0..r2 name. */
const OBJECTS = ['doc:d0', 'doc:d1', 'folder:f0', 'folder:f1'];
/** The namespaces whose definitions change (each declared with relationsArb's relations, or open); team stays open. */
const CHANGING = ['doc', 'folder'] as const;
type Changing = (typeof CHANGING)[number];
/** The subjects checked. */
const SUBJECTS = ['user:u0', 'user:u1', 'agent:a0', 'agent:a1', 'team:t0', 'folder:f0'];
const QUERIES = queriesOn(SUBJECTS, OBJECTS);
/** What each key's check over HTTP asks. */
const KEY_QUERY: Triple = ['agent:a0', 'r1', 'doc:d0'];
const MAX_KEYS = 4;
/** Window bounds and clock instants, in ms after the run's start T: whole seconds, and the clock also a millisecond before one. */
const SECONDS = 6;

interface Model {
  /** The server's clock, in ms after T. */
  now: number;
  definitions: Record<Changing, RelationDefinitions | null>;
  /** Every grant written and not deleted, in force or not, by its triple joined with spaces; windows in ms after T. */
  grants: Map<string, { triple: Triple; window: GrantWindow | null }>;
  /** Registered agents' scopes. */
  agents: Map<string, string[]>;
  /** API keys made, with the agents on whose authority they were made. */
  keys: { id: string; secret: string; agents: string[]; live: boolean }[];
  followerLoaded: boolean;
}

interface Real {
  /** The run's start on the server's clock (epoch ms). */
  T: number;
  g: Awaited<ReturnType<typeof tenantGraph>>;
  api: ReturnType<typeof client>;
}

const iso = (T: number, ms: number | null) => (ms === null ? null : new Date(T + ms).toISOString());
const showWindow = (w: GrantWindow | null) => (w === null ? '' : ` [${w.notBefore ?? '-inf'}, ${w.expiresAt ?? 'inf'})`);
const named = (triple: Triple, id: string) => triple[0] === `agent:${id}` || triple[2] === `agent:${id}`;
const unregisteredAgent = (m: Model, triple: Triple) =>
  [triple[0], triple[2]].some((ref) => ref.startsWith('agent:') && !m.agents.has(ref.slice('agent:'.length)));
/** Why the API refuses the window at the model's instant (400), if it does: docs/model.md#time-bound-grants. */
const badWindow = (m: Model, w: GrantWindow | null) =>
  w?.expiresAt != null && (w.expiresAt <= m.now || (w.notBefore !== null && w.expiresAt <= w.notBefore));
const windowBody = (T: number, w: GrantWindow | null) => ({ not_before: iso(T, w?.notBefore ?? null), expires_at: iso(T, w?.expiresAt ?? null) });
const tripleBody = ([subject, relation, object]: Triple) => ({ subject, relation, object });

/** Everything every engine answers, against the reference on the model at its instant. */
async function agreeEverywhere(m: Model, { g }: Real, after: string) {
  const want = referenceCheck({
    definitions: m.definitions,
    grants: [...m.grants.values()].filter(({ window }) => inForce(window, m.now)).map(({ triple }) => triple),
    scopes: m.agents,
  });
  const at = `after ${after}, at +${m.now} ms`;
  const nodes = { writer, databaseOnly, ...(m.followerLoaded ? { follower } : {}) };
  for (const [name, node] of Object.entries(nodes)) {
    const wrong = (await disagreeing(node.engine, g.tenantId, QUERIES, want)).map((q) => `${q.join(' ')} (reference: ${want(...q)})`);
    expect(wrong, `${name} ${at} answers wrongly ${wrong.join(', ')}`).toEqual([]);
  }
  // Listings, walked in memory (the writer) and in PostgreSQL.
  for (const on of [writer, databaseOnly]) {
    for (const subject of ['user:u0', 'agent:a0']) {
      const objects = IDS.doc!.filter((id) => want(subject, 'r2', `doc:${id}`));
      expect(await g.listAll(subject, 'doc', 'r2', 1, { on }), `objects of ${subject} ${at}`).toEqual(objects);
    }
    for (const ns of ['user', 'agent']) {
      const subjects = IDS[ns]!.filter((id) => want(`${ns}:${id}`, 'r1', 'doc:d0'));
      expect(await g.subjectsAll('doc:d0', 'r1', ns, 1, { on }), `${ns} subjects of doc:d0 ${at}`).toEqual(subjects);
    }
  }
  // Each key over HTTP: answered while live, refused once revoked or its agent killed.
  for (const key of m.keys) {
    const response = await client(app, key.secret).post('/v1/check', tripleBody(KEY_QUERY));
    const expected = key.live ? { status: 200, body: { allowed: want(...KEY_QUERY) } } : { status: 401 };
    expect({ status: response.status, ...(key.live ? { body: response.body as unknown } : {}) }, `key ${key.id} ${at}`).toEqual(expected);
  }
}

/**
 * The step's request, which must answer as `expected`: its status, and its body when given. The
 * model is changed only after, so that a request refused unexpectedly stops the run right there.
 */
async function answered(step: Step, request: () => Promise<{ status: number; body: unknown }>, expected: { status: number; body?: unknown }) {
  const response = await request();
  const seen = { status: response.status, ...('body' in expected ? { body: response.body } : {}) };
  expect(seen, `${step.toString()}: ${JSON.stringify(response.body)}`).toEqual(expected);
  return response.body;
}

/** A step of the model: always applicable unless it says otherwise; `act` changes the system and the model, then every engine is compared. */
abstract class Step implements fc.AsyncCommand<Model, Real> {
  check(_m: Readonly<Model>): boolean {
    return true;
  }

  async run(m: Model, r: Real): Promise<void> {
    await this.act(m, r);
    await agreeEverywhere(m, r, this.toString());
  }

  protected abstract act(m: Model, r: Real): Promise<void>;
  abstract toString(): string;
}

class WriteGrant extends Step {
  constructor(
    readonly triple: Triple,
    readonly window: GrantWindow | null,
  ) {
    super();
  }

  protected async act(m: Model, r: Real) {
    const key = this.triple.join(' ');
    const status = badWindow(m, this.window) ? 400 : unregisteredAgent(m, this.triple) ? 404 : m.grants.has(key) ? 200 : 201;
    await answered(this, () => r.api.post('/v1/grants', { ...tripleBody(this.triple), ...windowBody(r.T, this.window) }), { status });
    if (status < 300) m.grants.set(key, { triple: this.triple, window: this.window });
  }

  toString() {
    return `write ${this.triple.join(' ')}${showWindow(this.window)}`;
  }
}

class WriteBatch extends Step {
  constructor(
    readonly writes: { triple: Triple; window: GrantWindow | null }[],
    readonly deletes: Triple[],
  ) {
    super();
  }

  protected async act(m: Model, r: Real) {
    // Written: created, or with its window replaced (docs/model.md#time-bound-grants).
    const written = this.writes.filter(({ triple, window }) => {
      const held = m.grants.get(triple.join(' '));
      return held === undefined || !sameWindow(held.window, window);
    });
    const deleted = this.deletes.filter((triple) => m.grants.has(triple.join(' ')));
    const expected = this.writes.some(({ window }) => badWindow(m, window))
      ? { status: 400 }
      : this.writes.some(({ triple }) => unregisteredAgent(m, triple))
        ? { status: 404 }
        : { status: 200, body: { written: written.length, deleted: deleted.length } };
    const body = {
      writes: this.writes.map(({ triple, window }) => ({ ...tripleBody(triple), ...windowBody(r.T, window) })),
      deletes: this.deletes.map(tripleBody),
    };
    await answered(this, () => r.api.post('/v1/grants/batch', body), expected);
    if (expected.status !== 200) return;
    for (const { triple, window } of this.writes) m.grants.set(triple.join(' '), { triple, window });
    for (const triple of this.deletes) m.grants.delete(triple.join(' '));
  }

  toString() {
    const writes = this.writes.map(({ triple, window }) => triple.join(' ') + showWindow(window));
    return `batch writes ${writes.join(', ')}; deletes ${this.deletes.map((t) => t.join(' ')).join(', ')}`;
  }
}

class DeleteGrant extends Step {
  constructor(readonly triple: Triple) {
    super();
  }

  protected async act(m: Model, r: Real) {
    await answered(this, () => r.api.delete('/v1/grants', tripleBody(this.triple)), { status: 204 });
    m.grants.delete(this.triple.join(' '));
  }

  toString() {
    return `delete ${this.triple.join(' ')}`;
  }
}

class ChangeNamespace extends Step {
  constructor(
    readonly name: Changing,
    readonly relations: RelationDefinitions | null,
  ) {
    super();
  }

  protected async act(m: Model, r: Real) {
    // Every definition drawn declares every relation a grant uses, so no change is refused.
    const body = this.relations === null ? {} : { relations: this.relations };
    await answered(this, () => r.api.put(`/v1/namespaces/${this.name}`, body), { status: 200 });
    m.definitions[this.name] = this.relations;
  }

  toString() {
    return `namespace ${this.name} ${this.relations === null ? 'open' : JSON.stringify(this.relations)}`;
  }
}

class CreateAgent extends Step {
  constructor(
    readonly id: string,
    readonly scope: string[],
  ) {
    super();
  }

  protected async act(m: Model, r: Real) {
    const exists = m.agents.has(this.id);
    await answered(this, () => r.api.post('/v1/agents', { external_id: this.id, scope: this.scope }), { status: exists ? 409 : 201 });
    if (!exists) m.agents.set(this.id, this.scope);
  }

  toString() {
    return `agent ${this.id} [${this.scope.join(', ')}]`;
  }
}

/** The killswitch: the agent, every grant naming it (in force or not), and the keys made on its authority. */
class KillAgent extends Step {
  constructor(readonly id: string) {
    super();
  }

  protected async act(m: Model, r: Real) {
    const naming = [...m.grants.entries()].filter(([, { triple }]) => named(triple, this.id));
    const expected = m.agents.has(this.id)
      ? { status: 200, body: { external_id: this.id, grants_removed: naming.length, clients_removed: 0 } }
      : { status: 404 };
    await answered(this, () => r.api.delete(`/v1/agents/${this.id}`), expected);
    m.agents.delete(this.id);
    for (const [key] of naming) m.grants.delete(key);
    for (const key of m.keys) if (key.agents.includes(this.id)) key.live = false;
  }

  toString() {
    return `kill ${this.id}`;
  }
}

/**
 * An API key, made by the admin key, or by another key of the model (so on its authority: a chain
 * stays its first agent's), or on an agent's authority: that one in the store, recording the agent
 * as the key an agent's OAuth token makes does (authorityOf), with no OAuth round trips.
 */
class MakeKey extends Step {
  constructor(readonly by: { admin: true } | { key: number } | { agent: string }) {
    super();
  }

  override check(m: Readonly<Model>) {
    return m.keys.length < MAX_KEYS && ('key' in this.by ? m.keys.length > 0 : 'agent' in this.by ? m.agents.has(this.by.agent) : true);
  }

  protected async act(m: Model, r: Real) {
    const scopes: KeyScope[] = ['check:read', 'admin'];
    if ('agent' in this.by) {
      const key = await createKey(writer.db, r.g.tenantId, 'model', scopes, [this.by.agent]);
      m.keys.push({ id: key.id, secret: key.secret, agents: [this.by.agent], live: true });
      return;
    }
    const parent = 'key' in this.by ? m.keys[this.by.key % m.keys.length]! : null;
    const live = parent?.live ?? true;
    const made = (await answered(this, () => client(app, parent?.secret ?? r.g.adminKey).post('/v1/keys', { label: 'model', scopes }), {
      status: live ? 201 : 401,
    })) as { id: string; secret: string };
    if (live) m.keys.push({ id: made.id, secret: made.secret, agents: parent?.agents ?? [], live: true });
  }

  toString() {
    return `key by ${JSON.stringify(this.by)}`;
  }
}

class RevokeKey extends Step {
  constructor(readonly index: number) {
    super();
  }

  override check(m: Readonly<Model>) {
    return m.keys.length > 0;
  }

  protected async act(m: Model, r: Real) {
    const key = m.keys[this.index % m.keys.length]!;
    await answered(this, () => r.api.delete(`/v1/keys/${key.id}`), { status: key.live ? 204 : 404 });
    key.live = false;
  }

  toString() {
    return `revoke key ${this.index}`;
  }
}

/** The server's clock set to `ms` after T, forwards or back: windows open and close with no write. */
class MoveClock extends Step {
  constructor(readonly ms: number) {
    super();
  }

  protected act(m: Model, r: Real) {
    vi.setSystemTime(r.T + this.ms);
    m.now = this.ms;
    return Promise.resolve();
  }

  toString() {
    return `clock +${this.ms} ms`;
  }
}

/** A node loads the tenant into memory now, after the steps so far, and follows the log from there. */
class LoadFollower extends Step {
  override check(m: Readonly<Model>) {
    return !m.followerLoaded;
  }

  protected async act(m: Model, r: Real) {
    expect(await follower.heldTenants.load(r.g.tenantId)).toBe(true);
    m.followerLoaded = true;
  }

  toString() {
    return 'follower loads';
  }
}

/** Grants of what is checked (on docs and folders), parents (what arrows follow), and memberships of teams, users and agents (groups). */
const tripleArb: fc.Arbitrary<Triple> = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...SUBJECTS), fc.constantFrom('r0', 'r1', 'r2'), fc.constantFrom(...OBJECTS)) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...OBJECTS), fc.constant('parent'), fc.constantFrom(...OBJECTS)) },
  {
    weight: 2,
    arbitrary: fc.tuple(
      fc.constantFrom(...REFS.filter((r) => /^(user|agent|folder):/.test(r))),
      fc.constant('member'),
      fc.constantFrom(...REFS.filter((r) => /^(team|user|agent):/.test(r))),
    ),
  },
);
const instantArb = fc.integer({ min: 0, max: SECONDS }).map((s) => 1000 * s);
/** No window half the time; else each bound open or a whole second (an end not after the start is refused, as is one in the past). */
const windowArb: fc.Arbitrary<GrantWindow | null> = fc.oneof(
  fc.constant(null),
  fc.tuple(fc.option(instantArb, { nil: null }), fc.option(instantArb, { nil: null })).map(([from, to]) => windowOf(from, to)),
);
const agentIdArb = fc.constantFrom(...IDS.agent!);

const stepsArb = fc.commands(
  [
    ...[1, 2, 3].map(() => fc.tuple(tripleArb, windowArb).map(([triple, window]) => new WriteGrant(triple, window))),
    fc
      .uniqueArray(fc.tuple(tripleArb, windowArb, fc.boolean()), { minLength: 1, maxLength: 6, selector: ([t]) => t.join(' ') })
      .filter((items) => items.some(([, , write]) => write))
      .map(
        (items) =>
          new WriteBatch(
            items.filter(([, , write]) => write).map(([triple, window]) => ({ triple, window })),
            items.filter(([, , write]) => !write).map(([triple]) => triple),
          ),
      ),
    tripleArb.map((triple) => new DeleteGrant(triple)),
    fc
      .tuple(fc.constantFrom(...CHANGING), fc.option(relationsArb, { nil: null, freq: 4 }))
      .map(([name, relations]) => new ChangeNamespace(name, relations)),
    fc.tuple(agentIdArb, fc.subarray(SCOPES)).map(([id, scope]) => new CreateAgent(id, scope)),
    agentIdArb.map((id) => new KillAgent(id)),
    fc
      .oneof(
        fc.constant({ admin: true as const }),
        fc.nat().map((key) => ({ key })),
        agentIdArb.map((agent) => ({ agent })),
      )
      .map((by) => new MakeKey(by)),
    fc.nat().map((index) => new RevokeKey(index)),
    fc.tuple(instantArb, fc.boolean()).map(([ms, before]) => new MoveClock(before && ms > 0 ? ms - 1 : ms)),
    fc.constant(new LoadFollower()),
  ],
  replayedCommands({ maxCommands: scaled(30), size: 'max' }),
);

/** The tenant's first definitions and agents, and the grants written first (a batch of grants the API takes at T). */
const startArb = fc.record({
  doc: relationsArb,
  folder: relationsArb,
  agents: fc.subarray(IDS.agent!),
  scope: fc.subarray(SCOPES),
  grants: fc.uniqueArray(fc.record({ triple: tripleArb, window: windowArb }), {
    maxLength: 20,
    size: 'max',
    selector: ({ triple }) => triple.join(' '),
  }),
});

describe('every engine against the reference, step after step', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('agrees after every write, delete, namespace change, agent registered or killed, key made or revoked and clock move', async () => {
    await assertProperty(
      fc.asyncProperty(startArb, stepsArb, async (start, steps) => {
        vi.useRealTimers();
        // A whole second, well ahead of the real clock, so that the windows' ISO times are exact.
        const T = Math.ceil(Date.now() / 1000) * 1000 + 10_000;
        vi.useFakeTimers({ toFake: ['Date'], now: T });
        const g = await tenantGraph(writer);
        await g.namespace('doc', start.doc);
        await g.namespace('folder', start.folder);
        await g.namespace('team');
        for (const id of start.agents) await g.agent(id, start.scope);
        expect(await writer.heldTenants.load(g.tenantId)).toBe(true);
        const model: Model = {
          now: 0,
          definitions: { doc: start.doc, folder: start.folder },
          grants: new Map(),
          agents: new Map(start.agents.map((id) => [id, start.scope])),
          keys: [],
          followerLoaded: false,
        };
        const first = start.grants.filter(({ triple, window }) => !badWindow(model, window) && !unregisteredAgent(model, triple));
        await fc.asyncModelRun(
          () => ({ model, real: { T, g, api: client(app, g.adminKey) } }),
          [...(first.length > 0 ? [new WriteBatch(first, [])] : []), ...steps],
        );
      }),
      { numRuns: scaled(16) },
    );
  }, 300_000);
});
