/**
 * The noisy_neighbour scenario's tenants and workloads (bench/README.md, "noisy_neighbour"): tenant
 * B, an ordinary small tenant held in memory, and the workloads of the audits' findings that tenant
 * A runs against the same node, each as a tenant of its own so that one finding's fix shows apart
 * from the others': A-schema (large namespace definitions), A-fanout (a fan-out graph held in
 * memory, checked in bulk), A-sql (the same fan-out graph, too large for the node's
 * GRANTD_GRAPH_MEMORY, so that PostgreSQL answers its checks), A-explain (explanations on a wide
 * graph held in memory), A-subjects (subjects listings on the fan-out graph) and A-windows
 * (windowed grants on one hot object, their expiries passing while it is checked).
 */
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { checkMix, Dataset, type NamespaceDef, type Sizes, type Triple } from './dataset.ts';
import { Api, holdInMemory, loadGrantd, writeGrants } from './load.ts';
import { openLoopInChild, prepareOpenLoop } from './open-loop.ts';
import { measure, medianOf, type RunStats } from './scenarios.ts';
import { createTenant, startGrantd, vacuumDatabase } from './servers.ts';

/** Tenant B: a document/folder model like the dataset's, about 8,000 grants. */
const B_SIZES: Sizes = { users: 1_000, groups: 100, agents: 100, folders: 100, topFolders: 10, documents: 2_000, allGroup: false };
/** B's single checks a second, open loop. */
const B_RATE = 500;
/**
 * A's offered load, open loop (requests a second), the same whatever the server answers: a closed
 * loop of A's cheap answers (404s, refusals) would only take the cores from B, which measures the
 * machine's share of CPU rather than isolation. Slow answers pile up as concurrent requests.
 */
const A_RATES = { schema: 10, fanout: 4, sql: 10, explain: 4, subjects: 4, windows: 2, hot: 20 } as const;
type Workload = keyof typeof A_RATES;
/**
 * A's loads start this long before each of B's runs and end with it: each is a process of its own,
 * whose start (Node compiling the load's script, about 0.6 s of CPU) fell in the first seconds of
 * B's run when all started together, seven of them on the two cores.
 */
const A_LEAD_S = 2;
/** Room in GRANTD_GRAPH_MEMORY beyond B and A-fanout; A-sql holds this much more than fits. */
const MEMORY_SLACK = 10_000;

// ---------------------------------------------------------------- A-schema: large namespace definitions

/** Namespaces A-schema tries to create: past the ~100 a tenant is to be allowed, so that a fixed server's limit is met. */
const MAX_LARGE_NAMESPACES = 128;
/** The contract's bounds today (contract/namespaces.ts): the first shape tried. */
const LARGEST_SHAPE = { relations: 128, includes: 64 };

interface Shape {
  relations: number;
  includes: number;
}

/**
 * `parent` and relations r1..r(n-1), each including its predecessor and arrows over `parent` to
 * the relations after it (the first includes arrows only): `includes` entries a relation.
 */
function largeNamespace(name: string, { relations, includes }: Shape): NamespaceDef {
  const count = relations - 1;
  const defs: NamespaceDef['relations'] = { parent: {} };
  for (let r = 1; r <= count; r++) {
    const predecessor = r > 1 ? [`r${r - 1}`] : [];
    const arrows = Array.from({ length: includes - predecessor.length }, (_, k) => `parent->r${((r + k) % count) + 1}`);
    defs[`r${r}`] = { includes: [...predecessor, ...arrows] };
  }
  return { name, relations: defs };
}

/** The next smaller shape after a refusal: fewer includes while they are over a quarter of the relations, else fewer relations. */
function smaller({ relations, includes }: Shape): Shape | null {
  const next = includes > relations / 4 ? { relations, includes: includes / 2 } : { relations: relations / 2, includes };
  return next.relations >= 2 && next.includes >= 1 ? next : null;
}

const refused = (status: number) => status === 400 || status === 413;

export interface LargeNamespaces {
  created: number;
  shape: Shape | null;
  refusals: number;
  /** Any other answer, which ended the creation (a server error): the scenario goes on with what was made. */
  unexpected: number | null;
}

/**
 * Creates namespaces big0, big1, ... of the largest shape the server accepts, until it refuses one
 * of a shape it accepted before (its limit on namespaces) or MAX_LARGE_NAMESPACES are made. A 400
 * (or 413) is the expected answer of a server with limits: it shrinks the shape, never fails.
 */
async function createLargeNamespaces(api: Api): Promise<LargeNamespaces> {
  let shape: Shape | null = LARGEST_SHAPE;
  let accepted = false;
  let created = 0;
  let refusals = 0;
  while (shape && created < MAX_LARGE_NAMESPACES) {
    const status = await api.status('POST', '/v1/namespaces', largeNamespace(`big${created}`, shape));
    if (status === 201) {
      accepted = true;
      created++;
    } else if (refused(status)) {
      refusals++;
      if (accepted) break;
      shape = smaller(shape);
    } else {
      return { created, shape: accepted ? shape : null, refusals, unexpected: status };
    }
  }
  return { created, shape: accepted ? shape : null, refusals, unexpected: null };
}

/** Checks naming the large namespaces (the last relation: the longest chain of includes) and, as often, namespaces that do not exist (404). */
function largeNamespaceChecks({ created, shape }: LargeNamespaces, count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const known = created > 0 && shape !== null && i % 2 === 0;
    const object = known ? `big${(i >> 1) % created}:o${i}` : `missing${i % 1000}:o${i}`;
    return JSON.stringify({ subject: `user:nobody${i}`, relation: known ? `r${shape.relations - 1}` : 'r1', object });
  });
}

// ---------------------------------------------------------------- A-fanout and A-sql: the fan-out graph

const FANOUT_NODES = 300;
const FANOUT_RELATIONS = ['r1', 'r2', 'r3', 'r4'];

/** `node`: four relations, each including the four of every parent. */
const FANOUT_NAMESPACE: NamespaceDef = {
  name: 'node',
  relations: {
    parent: {},
    ...Object.fromEntries(FANOUT_RELATIONS.map((r) => [r, { includes: FANOUT_RELATIONS.map((target) => `parent->${target}`) }])),
  },
};

/** Every node a parent of every other: 300 x 299 = 89,700 grants. */
function* fanOutGrants(): Generator<Triple> {
  for (let parent = 0; parent < FANOUT_NODES; parent++) {
    for (let child = 0; child < FANOUT_NODES; child++) {
      if (child !== parent) yield { subject: `node:n${parent}`, relation: 'parent', object: `node:n${child}` };
    }
  }
}
const FANOUT_GRANTS = FANOUT_NODES * (FANOUT_NODES - 1);

/**
 * A check on the fan-out graph that holds nowhere, so that it walks everything the node reaches.
 * The subject is another node: a subject no grant names is refused before any walk.
 */
const fanOutCheck = (i: number): Triple => ({
  subject: `node:n${(i + 1 + Math.floor(i / FANOUT_NODES)) % FANOUT_NODES}`,
  relation: FANOUT_RELATIONS[i % FANOUT_RELATIONS.length]!,
  object: `node:n${i % FANOUT_NODES}`,
});

/** Bulks of 100 distinct fan-out checks. */
function fanOutBulks(count: number): string[] {
  return Array.from({ length: count }, (_, b) => JSON.stringify({ checks: Array.from({ length: 100 }, (_, k) => fanOutCheck(b * 100 + k)) }));
}

/** `doc`: A-sql's ordinary grants, which take it past the node's memory. */
const DOC_NAMESPACE: NamespaceDef = { name: 'doc', relations: { owner: {}, viewer: { includes: ['owner'] } } };

function* docGrants(count: number): Generator<Triple> {
  for (let d = 0; d < count; d++) yield { subject: `user:u${d % 1000}`, relation: 'owner', object: `doc:d${d}` };
}

/** A-sql's single checks: fan-out checks and ordinary document checks in turn, all distinct (PostgreSQL's answers are cached 500 ms). */
function sqlChecks(docs: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify(i % 2 === 0 ? fanOutCheck(i) : { subject: `user:u${i % 1000}`, relation: 'viewer', object: `doc:d${i % docs}` }),
  );
}

// ---------------------------------------------------------------- A-explain: a wide graph, explained

/** A user in this many groups, and an object with as many parents (the audit's 8,000 x 8,000). */
const WIDE = 8_000;

/** `n2`: `r1` includes `parent->r1`. */
const WIDE_NAMESPACE: NamespaceDef = { name: 'n2', relations: { parent: {}, r1: { includes: ['parent->r1'] } } };
const TEAM_NAMESPACE: NamespaceDef = { name: 'team', relations: { member: {} } };

function* wideGrants(): Generator<Triple> {
  for (let i = 0; i < WIDE; i++) {
    yield { subject: 'user:wide', relation: 'member', object: `team:t${i}` };
    yield { subject: `n2:p${i}`, relation: 'parent', object: 'n2:o' };
  }
}

/** Explanations of the wide user on the wide object, and of users of few groups on it, in turn. */
const wideExplains = (count: number): string[] =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ subject: i % 2 === 0 ? 'user:wide' : `user:few${i}`, relation: 'r1', object: 'n2:o' }));

// ---------------------------------------------------------------- A-subjects: the fan-out graph's subjects

/** Subjects listings on the fan-out graph: every node's holders of each relation, a walk of all the node reaches. */
const fanOutSubjects = (count: number): string[] =>
  Array.from(
    { length: count },
    (_, i) => `?object=node:n${i % FANOUT_NODES}&relation=${FANOUT_RELATIONS[i % FANOUT_RELATIONS.length]}&subject_namespace=node`,
  );

// ---------------------------------------------------------------- A-windows: one hot object's windowed grants

/** Windowed grants a batch writes, and their expiries' spacing: 200 expiries a second pass once they begin. */
const WINDOWED_BATCH = 1_000;
const EXPIRY_SPACING_MS = 5;
/** The expiries begin this long after the bodies are made, right before each run. */
const EXPIRIES_FROM_MS = 1_000;

/** Batches of (user:sN, viewer, doc:hot) grants expiring EXPIRY_SPACING_MS apart from EXPIRIES_FROM_MS on (made anew before each run). */
function windowedBatches(count: number): string[] {
  const from = Date.now() + EXPIRIES_FROM_MS;
  return Array.from({ length: count }, (_, b) =>
    JSON.stringify({
      writes: Array.from({ length: WINDOWED_BATCH }, (_, k) => {
        const n = b * WINDOWED_BATCH + k;
        return { subject: `user:s${n}`, relation: 'viewer', object: 'doc:hot', expires_at: new Date(from + n * EXPIRY_SPACING_MS).toISOString() };
      }),
    }),
  );
}

/** Checks of the hot object, which bring its windows to the clock. */
const hotChecks = (count: number): string[] =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ subject: `user:s${i}`, relation: 'viewer', object: 'doc:hot' }));

// ---------------------------------------------------------------- the scenario

export interface NoisyOutcome {
  /** B's single checks with A idle, and while A runs its three workloads (medians over the runs). */
  alone: RunStats;
  underA: RunStats;
  /** A's answers per workload, over the warm-up and the runs (statuses and errors summed). */
  a: Record<Workload, RunStats>;
  /** With `each`: B under each of A's workloads running by itself (medians over the runs). */
  underEach: Partial<Record<Workload, RunStats>>;
  namespaces: LargeNamespaces;
  graphMemory: number;
  bHeld: number;
  aRates: typeof A_RATES;
  bRate: number;
}

interface Context {
  root: string;
  databaseUrl: string;
  workers: number;
  plan: { warmupS: number; durationS: number; runs: number };
  workDir: string;
  seed: number;
  /** Also measure B under each of A's workloads by itself. */
  each: boolean;
  log: (line: string) => void;
}

/**
 * One grantd, GRANTD_GRAPH_MEMORY room for B and A-fanout but not A-sql; B's checks at a fixed
 * rate alone, then with A's three workloads running alongside each run (warm-up included).
 */
export async function noisyNeighbour(ctx: Context): Promise<NoisyOutcome> {
  const b = new Dataset('S', ctx.seed, B_SIZES);
  const bHeld = [...b.triples()].length + B_SIZES.agents;
  const graphMemory = bHeld + FANOUT_GRANTS + MEMORY_SLACK;
  const sqlDocs = graphMemory - FANOUT_GRANTS + 1_000;
  const tenant = (name: string) => createTenant(ctx.root, ctx.databaseUrl, `noisy-${name}`);
  const [keyB, keySchema, keyFanout, keySql, keyExplain, keyWindows] = await Promise.all([
    tenant('b'),
    tenant('a-schema'),
    tenant('a-fanout'),
    tenant('a-sql'),
    tenant('a-explain'),
    tenant('a-windows'),
  ]);
  // Room for A-explain's wide graph and A-windows' grants too; A-sql still does not fit.
  const extraHeld = 2 * WIDE + A_RATES.windows * WINDOWED_BATCH * 60;
  const nodeMemory = graphMemory + extraHeld;
  const server = await startGrantd(ctx.root, ctx.databaseUrl, ctx.workers, { GRANTD_GRAPH_MEMORY: String(nodeMemory) });
  try {
    const apiB = new Api(server.url, keyB);
    const apiSchema = new Api(server.url, keySchema);
    const apiFanout = new Api(server.url, keyFanout);
    const apiSql = new Api(server.url, keySql);
    const apiExplain = new Api(server.url, keyExplain);
    const apiWindows = new Api(server.url, keyWindows);
    ctx.log(
      `noisy_neighbour: loading B (${bHeld} grants and agents), A-fanout (${FANOUT_GRANTS}) and A-sql (${FANOUT_GRANTS + sqlDocs + extraHeld}, over GRANTD_GRAPH_MEMORY=${nodeMemory})`,
    );
    await loadGrantd(apiB, b, ctx.log);
    await apiFanout.call('POST', '/v1/namespaces', FANOUT_NAMESPACE);
    await writeGrants(apiFanout, fanOutGrants(), ctx.log);
    for (const ns of [FANOUT_NAMESPACE, DOC_NAMESPACE]) await apiSql.call('POST', '/v1/namespaces', ns);
    await writeGrants(apiSql, fanOutGrants(), ctx.log);
    await writeGrants(apiSql, docGrants(sqlDocs + extraHeld), ctx.log);
    for (const ns of [WIDE_NAMESPACE, TEAM_NAMESPACE]) await apiExplain.call('POST', '/v1/namespaces', ns);
    await writeGrants(apiExplain, wideGrants(), ctx.log);
    await writeGrants(apiExplain, [{ subject: 'user:few1', relation: 'r1', object: 'n2:elsewhere' }], ctx.log);
    await apiWindows.call('POST', '/v1/namespaces', DOC_NAMESPACE);
    await vacuumDatabase(ctx.databaseUrl);
    const namespaces = await createLargeNamespaces(apiSchema);
    ctx.log(
      `noisy_neighbour: A-schema made ${namespaces.created} namespaces of ${JSON.stringify(namespaces.shape)} (${namespaces.refusals} refused${namespaces.unexpected ? `, then ${namespaces.unexpected}` : ''})`,
    );

    // B and A-fanout in memory on every worker first; a parent check is cheap while PostgreSQL answers.
    const bChecks = checkMix(b, 20_000, ctx.seed + 5);
    const probes = [
      { api: apiB, check: bChecks[0]! },
      { api: apiFanout, check: { subject: 'node:n1', relation: 'parent', object: 'node:n0' } },
      { api: apiExplain, check: { subject: 'n2:p1', relation: 'parent', object: 'n2:o' } },
    ];
    if ((await holdInMemory(probes, ctx.workers, bHeld + FANOUT_GRANTS + 2 * WIDE)) === null)
      ctx.log('noisy_neighbour: B, A-fanout and A-explain not held in memory within 300 s; measuring anyway');

    const bodies = (name: string, list: string[]) => {
      const file = join(ctx.workDir, `noisy-${name}.json`);
      writeFileSync(file, JSON.stringify(list));
      return file;
    };
    const bLoad = {
      url: server.url,
      path: '/v1/check',
      headers: apiB.headers(),
      bodiesFile: bodies(
        'b',
        bChecks.map(({ subject, relation, object }) => JSON.stringify({ subject, relation, object })),
      ),
      rate: B_RATE,
    };
    const aLoads: Record<Workload, Omit<typeof bLoad, 'rate'> & { method?: 'GET' }> = {
      schema: {
        url: server.url,
        path: '/v1/check',
        headers: apiSchema.headers(),
        bodiesFile: bodies('a-schema', largeNamespaceChecks(namespaces, 2_000)),
      },
      fanout: { url: server.url, path: '/v1/check/bulk', headers: apiFanout.headers(), bodiesFile: bodies('a-fanout', fanOutBulks(200)) },
      sql: { url: server.url, path: '/v1/check', headers: apiSql.headers(), bodiesFile: bodies('a-sql', sqlChecks(sqlDocs, 2_000)) },
      explain: { url: server.url, path: '/v1/check/explain', headers: apiExplain.headers(), bodiesFile: bodies('a-explain', wideExplains(200)) },
      subjects: {
        url: server.url,
        path: '/v1/subjects',
        method: 'GET',
        headers: apiFanout.headers(),
        bodiesFile: bodies('a-subjects', fanOutSubjects(1_200)),
      },
      windows: {
        url: server.url,
        path: '/v1/grants/batch',
        headers: apiWindows.headers(),
        bodiesFile: bodies('a-windows', windowedBatches(A_RATES.windows * 60)),
      },
      hot: { url: server.url, path: '/v1/check', headers: apiWindows.headers(), bodiesFile: bodies('a-hot', hotChecks(2_000)) },
    };

    const alone = (await measure('noisy_neighbour B alone', ctx.log, ctx.plan, (durationS) => openLoopInChild({ ...bLoad, durationS }))).median;
    const aRuns = Object.fromEntries(Object.keys(A_RATES).map((w) => [w, [] as RunStats[]])) as Record<Workload, RunStats[]>;
    /** B's run with `workloads` of A running alongside, from A_LEAD_S before it to its end; A's answers counted when `countA` (all of A, the reported row). */
    const bUnder = async (workloads: Workload[], durationS: number, countA: boolean) => {
      // Each run sends the bodies from the first: the expiries must lie ahead of this run.
      bodies('a-windows', windowedBatches(A_RATES.windows * 60));
      // Every child started and ready first: their start-up is not A's load (prepareOpenLoop).
      const [bReady, ...aReady] = await Promise.all([
        prepareOpenLoop({ ...bLoad, durationS }),
        ...workloads.map((w) => prepareOpenLoop({ ...aLoads[w], rate: A_RATES[w], durationS: durationS + A_LEAD_S })),
      ]);
      const aRunning = aReady.map((load) => load.go());
      for (const running of aRunning) running.catch(() => undefined); // seen by Promise.all below, not unhandled meanwhile
      await sleep(A_LEAD_S * 1000);
      const [bStats, ...aStats] = await Promise.all([bReady.go(), ...aRunning]);
      if (countA) workloads.forEach((w, i) => aRuns[w].push(aStats[i]!));
      return bStats;
    };
    const workloads = Object.keys(aLoads) as Workload[];
    const underA = (await measure('noisy_neighbour B under A', ctx.log, ctx.plan, (durationS) => bUnder(workloads, durationS, true))).median;
    const underEach: Partial<Record<Workload, RunStats>> = {};
    for (const w of ctx.each ? workloads : [])
      underEach[w] = (await measure(`noisy_neighbour B under A-${w} alone`, ctx.log, ctx.plan, (durationS) => bUnder([w], durationS, false))).median;
    const a = Object.fromEntries(Object.entries(aRuns).map(([w, runs]) => [w, medianOf(runs)])) as Record<Workload, RunStats>;
    return { alone, underA, a, underEach, namespaces, graphMemory: nodeMemory, bHeld, aRates: A_RATES, bRate: B_RATE };
  } finally {
    await server.proc.stop();
  }
}
