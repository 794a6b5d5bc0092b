/**
 * The many_tenants scenario (bench/README.md, "many_tenants"): 2,000 tenants of Zipf-distributed
 * sizes on one grantd whose GRANTD_GRAPH_MEMORY holds a third of their grants, checked at a fixed
 * rate, each check's tenant drawn by a Zipf law over a shuffled order of the tenants (how much a
 * tenant is checked does not follow its size). What the node holds is read from outside: its
 * /metrics and its processes' RSS while the load runs, and its log of held tenants (level info).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { hashSecret, newKeyId, newSecret, secretPrefix } from '../src/auth/secrets.ts';
import { NAMESPACES, prng } from './dataset.ts';
import { openLoopInChild, type OpenLoopStats } from './open-loop.ts';
import { percentile } from './scenarios.ts';
import { createTenant, startGrantd, switchTriggers, vacuumDatabase, type Trigger } from './servers.ts';

const TENANTS = 2_000;
/**
 * Tenants of SMALLEST grants, not among the TENANTS, checked for WARM_UP_S before the load: a node in
 * service has compiled its paths and opened its pools, so that the run measures cold tenants, not a
 * process starting.
 */
const WARM_UP_TENANTS = 50;
const WARM_UP_S = 5;
/** Tenant of size rank r holds ZIPF_SCALE / r grants, at most LARGEST and at least SMALLEST: 3.07 M in all. */
const ZIPF_SCALE = 400_000;
const LARGEST = 200_000;
const SMALLEST = 200;
/** Checks a second, open loop; and the Zipf exponent of how often each tenant is checked. */
const RATE = 500;
const CHECKS_EXPONENT = 1;
/** The changes feed's trigger on new grants, off while the grants are written (the feed is not what this scenario reads). */
export const FEED_TRIGGER: Trigger = { table: 'grants', name: 'grants_feed_created' };

export interface ManyTenantsOutcome {
  tenants: number;
  grants: number;
  largest: number[];
  graphMemory: number;
  workers: number;
  rate: number;
  seconds: number;
  all: OpenLoopStats;
  /** p99 of the second half of the run (held tenants settled). */
  steadyP99: number | null;
  /** Each tenant's first check of the run: while it loads (or is refused), PostgreSQL answers it. */
  cold: { count: number; p50: number | null; p99: number | null };
  /** Checks of tenants not loading, sent while another tenant's load (of LARGE_LOAD grants or more) ran, and while none ran. */
  duringLoads: { count: number; p99: number | null; loads: number };
  outsideLoads: { count: number; p99: number | null };
  /** Largest sum of grantd_graph_memory_grants over the workers seen, and the largest RSS of grantd's processes, MB. */
  maxHeldGrants: number;
  maxRssMb: number;
  held: HeldSummary;
}

/** Far above the keys a node looks up in a second here: the per-address limit is for attackers, not 2,000 tenants behind one address. */
const AUTH_FAILURE_LIMIT = 1_000_000;

/** Loads that count as "loading a tenant" for the 2x target: a few of the big tenants; the many small loads run all the time. */
const LARGE_LOAD = 10_000;

/** What the workers held at the end, from their log. */
export interface HeldSummary {
  perWorker: { pid: number; tenants: number; weight: number }[];
  /** Of the 20 most checked tenants, and of the 3 largest, how many each worker held at the end. */
  hottestHeld: number[];
  largestHeld: number[];
  /** Held tenants' and the others' checks in the run per 1,000 grants (median), over all workers. */
  heldDensity: number | null;
  unheldDensity: number | null;
  loads: number;
  displaced: number;
  notHeld: Record<string, number>;
}

/** Grants of the tenant of size rank r (0-based). */
export const tenantSize = (rank: number) => Math.max(SMALLEST, Math.min(LARGEST, Math.floor(ZIPF_SCALE / (rank + 1))));

interface Tenant {
  id: string;
  secret: string;
  grants: number;
}

/**
 * The tenants, written straight with SQL as the service writes them: one made by `grantd tenant
 * create` with the dataset's namespaces made through the API, then the others cloned from it
 * (their rows, their namespaces' rows, an admin key each), then each one's grants in one
 * INSERT ... SELECT from generate_series, so that the grant log's trigger logs each as one
 * statement, as a batch would be. The changes feed's trigger is off meanwhile.
 */
async function writeTenants(root: string, databaseUrl: string, log: (line: string) => void, switchedOff: (on: boolean) => void): Promise<Tenant[]> {
  const firstKey = await createTenant(root, databaseUrl, 'many-0');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const first = (await client.query<{ id: string }>(`SELECT id FROM tenants WHERE name = 'many-0'`)).rows[0]!.id;
    for (const ns of NAMESPACES) {
      await client.query(`INSERT INTO namespaces (tenant_id, name, relations) VALUES ($1, $2, $3::jsonb)`, [
        first,
        ns.name,
        JSON.stringify(ns.relations),
      ]);
    }
    const tenants: Tenant[] = [{ id: first, secret: firstKey, grants: tenantSize(0) }];
    for (let rank = 1; rank < TENANTS + WARM_UP_TENANTS; rank++) tenants.push({ id: randomUUID(), secret: newSecret(), grants: tenantSize(rank) });
    const others = tenants.slice(1);
    await client.query('BEGIN');
    await client.query(
      `INSERT INTO tenants (id, name, cursor_secret) SELECT id, 'many-' || n, secret FROM unnest($1::uuid[], $2::int[], $3::bytea[]) AS t(id, n, secret)`,
      [others.map((t) => t.id), others.map((_, i) => i + 1), others.map(() => randomBytes(32))],
    );
    await client.query(
      `INSERT INTO namespaces (tenant_id, name, relations) SELECT t.id, n.name, n.relations FROM unnest($1::uuid[]) AS t(id), namespaces n WHERE n.tenant_id = $2`,
      [others.map((t) => t.id), first],
    );
    await client.query(
      `INSERT INTO api_keys (id, tenant_id, prefix, secret_hash, label, scopes) SELECT k, t, p, h, 'admin', ARRAY['admin'] FROM unnest($1::text[], $2::uuid[], $3::text[], $4::bytea[]) AS x(k, t, p, h)`,
      [others.map(() => newKeyId()), others.map((t) => t.id), others.map((t) => secretPrefix(t.secret)), others.map((t) => hashSecret(t.secret))],
    );
    await client.query('COMMIT');
    await switchTriggers(databaseUrl, [FEED_TRIGGER], false);
    switchedOff(true);
    const started = performance.now();
    // Two connections, the largest tenants first.
    let next = 0;
    const writer = async () => {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      try {
        while (next < tenants.length) await c.query(GRANTS_SQL, shapeOf(tenants[next++]!));
      } finally {
        await c.end();
      }
    };
    await Promise.all([writer(), writer()]);
    log(
      `many_tenants: ${tenants.length} tenants, ${tenants.reduce((sum, t) => sum + t.grants, 0)} grants written in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return tenants;
  } finally {
    await switchTriggers(databaseUrl, [FEED_TRIGGER], true).catch(() => undefined);
    switchedOff(false);
    await client.end();
  }
}

/**
 * A tenant's grants, `grants` in all: 60% documents each with an owner among grants/10 users,
 * 20% documents in a folder, 10% folders viewed by a group, 10% groups with a member.
 */
const GRANTS_SQL = `
INSERT INTO grants (tenant_id, object_ns, object_id, relation, subject_ns, subject_id)
SELECT $1::uuid, 'document', 'd' || i, 'owner', 'user', 'u' || (i * 7919) % $2 FROM generate_series(0, $3 - 1) i
UNION ALL SELECT $1::uuid, 'document', 'd' || i, 'parent', 'folder', 'f' || i % $5 FROM generate_series(0, $4 - 1) i
UNION ALL SELECT $1::uuid, 'folder', 'f' || i, 'viewer', 'group', 'g' || (i * 17) % $6 FROM generate_series(0, $5 - 1) i
UNION ALL SELECT $1::uuid, 'group', 'g' || i, 'member', 'user', 'u' || (i * 31) % $2 FROM generate_series(0, $6 - 1) i`;

/** [tenant, users, owned documents, documents in folders, folders, groups] for GRANTS_SQL. */
function shapeOf({ id, grants }: Tenant): [string, number, number, number, number, number] {
  const [inFolders, folders, groups] = [Math.floor(grants / 5), Math.floor(grants / 10), Math.floor(grants / 10)];
  return [id, Math.max(10, Math.floor(grants / 10)), grants - inFolders - folders - groups, inFolders, folders, groups];
}

/** A check of tenant t: a user of it viewing one of its documents (allowed by ownership, a folder or a group, or denied). */
function checkOf(tenant: Tenant, random: () => number): string {
  const [, users, owned] = shapeOf(tenant);
  return JSON.stringify({
    subject: `user:u${Math.floor(random() * users)}`,
    relation: 'viewer',
    object: `document:d${Math.floor(random() * owned)}`,
  });
}

interface Context {
  root: string;
  databaseUrl: string;
  workers: number;
  quick: boolean;
  workDir: string;
  seed: number;
  log: (line: string) => void;
  switchedOff: (on: boolean) => void;
}

/** A line of grantd's log about the tenants it holds. */
interface HeldLine {
  pid: number;
  time: number;
  msg: string;
  tenantId: string;
  grants?: number;
  weight?: number;
  ms?: number;
  why?: string;
}

export async function manyTenants(ctx: Context): Promise<ManyTenantsOutcome> {
  const tenants = await writeTenants(ctx.root, ctx.databaseUrl, ctx.log, ctx.switchedOff);
  const warmUps = tenants.splice(TENANTS);
  // As autovacuum would soon after a bulk insert: statistics, and the visibility map the loads' counts read.
  await vacuumDatabase(ctx.databaseUrl);
  const total = tenants.reduce((sum, t) => sum + t.grants, 0);
  // A third of the measured tenants' grants, and room for the warm-up's, which stay held.
  const warmUpGrants = warmUps.reduce((sum, t) => sum + t.grants, 0);
  const graphMemory = Math.round(total / 3) + warmUpGrants;
  // How often each tenant is checked: Zipf over a seeded shuffle of the tenants.
  const random = prng(ctx.seed + 45);
  const byChecks = tenants.map((_, i) => i);
  for (let i = byChecks.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [byChecks[i], byChecks[j]] = [byChecks[j]!, byChecks[i]!];
  }
  const cumulative: number[] = [];
  let sum = 0;
  for (let r = 0; r < TENANTS; r++) cumulative.push((sum += 1 / (r + 1) ** CHECKS_EXPONENT));
  const seconds = ctx.quick ? 60 : 180;
  const count = RATE * seconds;
  const picked: number[] = [];
  const bodies: string[] = [];
  for (let n = 0; n < count; n++) {
    const u = random() * sum;
    let [lo, hi] = [0, TENANTS - 1];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    const tenant = byChecks[lo]!;
    picked.push(tenant);
    bodies.push(checkOf(tenants[tenant]!, random));
  }
  const bodiesFile = join(ctx.workDir, 'many-tenants.json');
  const authorizationsFile = join(ctx.workDir, 'many-tenants-authorizations.json');
  writeFileSync(bodiesFile, JSON.stringify(bodies));
  writeFileSync(authorizationsFile, JSON.stringify(picked.map((t) => `Bearer ${tenants[t]!.secret}`)));
  const warmUpBodiesFile = join(ctx.workDir, 'many-tenants-warm-up.json');
  const warmUpAuthorizationsFile = join(ctx.workDir, 'many-tenants-warm-up-authorizations.json');
  const warmUpPicked = Array.from({ length: RATE * WARM_UP_S }, () => warmUps[Math.floor(random() * warmUps.length)]!);
  writeFileSync(warmUpBodiesFile, JSON.stringify(warmUpPicked.map((t) => checkOf(t, random))));
  writeFileSync(warmUpAuthorizationsFile, JSON.stringify(warmUpPicked.map((t) => `Bearer ${t.secret}`)));

  const lines: HeldLine[] = [];
  const warmUpIds = new Set(warmUps.map((t) => t.id));
  const server = await startGrantd(
    ctx.root,
    ctx.databaseUrl,
    ctx.workers,
    {
      GRANTD_GRAPH_MEMORY: String(graphMemory),
      LOG_LEVEL: 'info',
      // The load comes from one address standing for 2,000 tenants' applications: keys not yet verified count against it until found.
      GRANTD_AUTH_FAILURE_LIMIT: String(AUTH_FAILURE_LIMIT),
    },
    undefined, // BENCH_GRANTD_NODE_ARGS
    (line) => {
      if (!line.includes('grants in memory: tenant')) return;
      const held = JSON.parse(line) as HeldLine;
      if (!warmUpIds.has(held.tenantId)) lines.push(held);
    },
  );
  try {
    ctx.log(`many_tenants: warm-up, ${RATE} checks/s for ${WARM_UP_S} s over ${WARM_UP_TENANTS} tenants of ${SMALLEST} grants`);
    await openLoopInChild({
      url: server.url,
      path: '/v1/check',
      headers: { 'content-type': 'application/json' },
      bodiesFile: warmUpBodiesFile,
      authorizationsFile: warmUpAuthorizationsFile,
      rate: RATE,
      durationS: WARM_UP_S,
    });
    ctx.log(
      `many_tenants: GRANTD_GRAPH_MEMORY=${graphMemory} (a third of ${total}, and the warm-up's ${warmUpGrants}); ${RATE} checks/s for ${seconds} s over ${TENANTS} tenants`,
    );
    let [maxHeldGrants, maxRssMb, sampling] = [0, 0, true];
    const sampler = (async () => {
      while (sampling) {
        const metrics = await fetch(`${server.url}/metrics`)
          .then((answer) => answer.text())
          .catch(() => '');
        const held = /^grantd_graph_memory_grants (\d+)/m.exec(metrics);
        if (held) maxHeldGrants = Math.max(maxHeldGrants, Number(held[1]));
        maxRssMb = Math.max(maxRssMb, treeRssMb(server.proc.child.pid!));
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    const all = await openLoopInChild({
      url: server.url,
      path: '/v1/check',
      headers: { 'content-type': 'application/json' },
      bodiesFile,
      authorizationsFile,
      rate: RATE,
      durationS: seconds,
      samples: true,
    });
    sampling = false;
    await sampler;
    const samples = all.samples!;
    const startedAt = all.startedAtMs!;
    delete all.samples;

    // Each tenant's first check; checks by when they were due.
    const seen = new Set<number>();
    const cold: number[] = [];
    const steady: number[] = [];
    const loadsOfLarge = lines.filter((l) => l.msg === 'grants in memory: tenant loaded' && (l.grants ?? 0) >= LARGE_LOAD && l.ms !== undefined);
    const intervals = loadsOfLarge.map((l) => ({ tenantId: l.tenantId, from: l.time - l.ms! - startedAt, to: l.time - startedAt }));
    const tenantIndex = new Map(tenants.map((t, i) => [t.id, i]));
    const during: number[] = [];
    const outside: number[] = [];
    const order = Array.from({ length: samples.length / 3 }, (_, k) => k).sort((a, b) => samples[3 * a + 1]! - samples[3 * b + 1]!);
    for (const k of order) {
      const [n, due, latency] = [samples[3 * k]!, samples[3 * k + 1]!, samples[3 * k + 2]!];
      const tenant = picked[n % picked.length]!;
      if (!seen.has(tenant)) {
        seen.add(tenant);
        cold.push(latency);
        continue;
      }
      if (due >= (seconds * 1000) / 2) steady.push(latency);
      const loads = intervals.filter((i) => due + latency >= i.from && due <= i.to);
      if (loads.some((i) => tenantIndex.get(i.tenantId) === tenant)) continue;
      (loads.length > 0 ? during : outside).push(latency);
    }
    for (const list of [cold, steady, during, outside]) list.sort((a, b) => a - b);
    return {
      tenants: TENANTS,
      grants: total,
      largest: tenants.slice(0, 3).map((t) => t.grants),
      graphMemory,
      workers: ctx.workers,
      rate: RATE,
      seconds,
      all,
      steadyP99: percentile(steady, 0.99),
      cold: { count: cold.length, p50: percentile(cold, 0.5), p99: percentile(cold, 0.99) },
      duringLoads: { count: during.length, p99: percentile(during, 0.99), loads: intervals.length },
      outsideLoads: { count: outside.length, p99: percentile(outside, 0.99) },
      maxHeldGrants,
      maxRssMb,
      held: summarise(lines, tenants, picked, byChecks),
    };
  } finally {
    await server.proc.stop();
  }
}

/** What each worker held at the end, replaying its log: loads add, drops take away. */
function summarise(lines: HeldLine[], tenants: Tenant[], picked: number[], byChecks: number[]): HeldSummary {
  const index = new Map(tenants.map((t, i) => [t.id, i]));
  const workers = new Map<number, Map<string, number>>();
  const notHeld: Record<string, number> = {};
  let [loads, displaced] = [0, 0];
  for (const line of lines) {
    const held = workers.get(line.pid) ?? new Map<string, number>();
    workers.set(line.pid, held);
    if (line.msg === 'grants in memory: tenant loaded') {
      loads++;
      held.set(line.tenantId, line.weight ?? 0);
    } else if (line.msg === 'grants in memory: tenant dropped') {
      if (line.why === 'displaced') displaced++;
      held.delete(line.tenantId);
    } else if (line.msg === 'grants in memory: tenant not held') notHeld[line.why ?? '?'] = (notHeld[line.why ?? '?'] ?? 0) + 1;
  }
  const checks = new Array<number>(tenants.length).fill(0);
  for (const t of picked) checks[t]!++;
  const density = (t: number) => (1000 * checks[t]!) / tenants[t]!.grants;
  const median = (xs: number[]) => (xs.sort((a, b) => a - b), percentile(xs, 0.5));
  const heldSets = [...workers.values()].map((held) => new Set([...held.keys()].map((id) => index.get(id)!)));
  const heldAnywhere = new Set(heldSets.flatMap((set) => [...set]));
  const checked = tenants.map((_, t) => t).filter((t) => checks[t]! > 0);
  return {
    perWorker: [...workers].map(([pid, held]) => ({ pid, tenants: held.size, weight: [...held.values()].reduce((a, b) => a + b, 0) })),
    hottestHeld: heldSets.map((set) => byChecks.slice(0, 20).filter((t) => set.has(t)).length),
    largestHeld: heldSets.map((set) => [0, 1, 2].filter((t) => set.has(t)).length),
    heldDensity: median(checked.filter((t) => heldAnywhere.has(t)).map(density)),
    unheldDensity: median(checked.filter((t) => !heldAnywhere.has(t)).map(density)),
    loads,
    displaced,
    notHeld,
  };
}

/** Resident memory of grantd's processes (the primary and its workers), MB, from /proc. */
function treeRssMb(pid: number): number {
  let kb = 0;
  for (const p of [pid, ...childrenOf(pid)]) {
    try {
      kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      // ended meanwhile
    }
  }
  return kb / 1024;
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
