/**
 * What a bulk of 100 costs in one process, piece by piece, on dataset S held in memory as a grantd
 * worker holds it (a GrantIndex and the agents' masks behind MemoryChecker and the engine): the
 * body's JSON.parse, the contract's bulk schema (zod's parse, and the server's: the same schema
 * compiled first, src/http/compiled-bodies.ts), the engine's checkBulk, and the answer's
 * JSON.stringify. CPU µs a bulk (process.cpuUsage), each piece over 2,000 of check_bulk_100's
 * bodies, five rounds; the least of the rounds is the figure least disturbed by the rest of a
 * shared machine.
 *
 *   node --import tsx bench/bulk-engine.ts
 */
import { contract } from '../contract/index.ts';
import { withCompiledBody } from '../src/http/compiled-bodies.ts';
import { WorkMeter } from '../src/engine/work-meter.ts';
import type { Checker } from '../src/engine/checker.ts';
import { AuthorizationEngine, type CheckInput } from '../src/engine/engine.ts';
import { GrantIndex } from '../src/engine/grant-index.ts';
import { windowOf } from '../src/engine/grant-window.ts';
import type { Ref } from '../src/engine/refs.ts';
import { CompiledSchema } from '../src/engine/schema.ts';
import type { HeldTenant, HeldTenants } from '../src/store/held-tenants.ts';
import { MemoryChecker, type MemoryFallback } from '../src/store/memory-checker.ts';
import { checkMix, Dataset, NAMESPACES } from './dataset.ts';

const SEED = 42;
const BODIES = 2_000;

/** A ref as the load's rows give it: namespace and id each a string of its own (as bench/index-memory.ts). */
const refOf = (value: string): Ref => {
  const colon = value.indexOf(':');
  return { ns: value.slice(0, colon), id: `${value.slice(colon + 1)}\u0000`.slice(0, -1) };
};

const ds = new Dataset('S', SEED);
const index = new GrantIndex();
for (const t of ds.triples()) {
  index.add(
    { subject: refOf(t.subject), relation: t.relation, object: refOf(t.object) },
    windowOf(null, t.expires_at ? Date.parse(t.expires_at) : null),
  );
}
index.compact();
const held = { index, agents: new Map(Array.from({ length: ds.sizes.agents }, (_, a) => [`a${a}`, ds.agentScope(a)])) } as unknown as HeldTenant;
/** The one tenant, held and current. */
const tenants = {
  current: () => Promise.resolve(held),
  currentNow: () => held,
  holds: () => true,
  heldElseUsed: () => true,
} as unknown as HeldTenants;
const schema = new CompiledSchema(NAMESPACES.map((ns) => ({ name: ns.name, relations: ns.relations })));
// The tenant is always held and current: nothing falls back, and a bulk only checks.
const memory = new MemoryChecker(tenants, new WorkMeter(), {} as MemoryFallback);
const checker = { schemas: { get: () => Promise.resolve(schema), getNow: () => schema }, checks: memory } as unknown as Checker;
const engine = new AuthorizationEngine(checker);

// check_bulk_100's bodies (bench/samples.ts loadBodies: seed + 3).
const checks = checkMix(ds, 100 * BODIES, SEED + 3);
const bodies = Array.from({ length: BODIES }, (_, b) =>
  JSON.stringify({ checks: checks.slice(100 * b, 100 * b + 100).map(({ subject, relation, object }) => ({ subject, relation, object })) }),
);
const parsed = bodies.map((body) => JSON.parse(body) as { checks: CheckInput[] });
const results = await Promise.all(parsed.map((body) => engine.checkBulk('t', body.checks)));
const zodSchema = contract.checkBulk.body;
const serversSchema = withCompiledBody(contract.checkBulk).body;

/** CPU µs a call of `work` over the bodies, after a warm-up. */
async function cpuPerCall(work: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 200; i++) await work(i);
  const start = process.cpuUsage();
  for (let i = 0; i < BODIES; i++) await work(i);
  const { user, system } = process.cpuUsage(start);
  return (user + system) / BODIES;
}

const pieces: [string, (i: number) => unknown][] = [
  ['JSON.parse of the body', (i) => JSON.parse(bodies[i]!) as unknown],
  ["the bulk schema, zod's safeParse", (i) => zodSchema.safeParse(parsed[i])],
  ["the bulk schema, the server's (compiled first)", (i) => serversSchema.safeParse(parsed[i])],
  ['engine.checkBulk', (i) => engine.checkBulk('t', parsed[i]!.checks)],
  ['JSON.stringify of the results', (i) => JSON.stringify({ results: results[i] })],
];
const rounds = new Map<string, number[]>(pieces.map(([name]) => [name, []]));
for (let round = 0; round < 5; round++) for (const [name, work] of pieces) rounds.get(name)!.push(await cpuPerCall(work));
for (const [name, us] of rounds)
  console.log(`${name}: least ${Math.min(...us).toFixed(0)} us a bulk (rounds ${us.map((u) => u.toFixed(0)).join(', ')})`);
