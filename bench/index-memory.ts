/**
 * What a tenant held in memory costs: builds a GrantIndex from a bench dataset's grants in this
 * process, as a load does (src/store/held-tenants.ts), and prints the time it took and the memory
 * it holds (heap and typed arrays after a full collection), in bytes a grant; then times first
 * pages of the listing walks on it (`reachable` for group:wide's members, `holders` for the
 * documents in its folders), as objects_first_page and subjects_first_page ask them.
 *
 *   node --expose-gc --import tsx bench/index-memory.ts [--dataset S|L] [--seed 42] [--pages 200]
 *
 * Ratios and bytes, not absolute times, compare across runs on a shared machine (bench/README.md).
 */
import { parseArgs } from 'node:util';
import { GrantIndex } from '../src/engine/grant-index.ts';
import { windowOf } from '../src/engine/grant-window.ts';
import type { Ref } from '../src/engine/refs.ts';
import { CompiledSchema } from '../src/engine/schema.ts';
import { Dataset, NAMESPACES, WIDE_MEMBERS, type SizeName } from './dataset.ts';

const { values: args } = parseArgs({
  options: { dataset: { type: 'string', default: 'L' }, seed: { type: 'string', default: '42' }, pages: { type: 'string', default: '200' } },
});
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

/** Heap and typed arrays' backing stores, after full collections. */
function held(): number {
  for (let i = 0; i < 3; i++) gc!();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** A ref as the load's rows give it: namespace and id each a string of its own (pg decodes each field apart). */
const refOf = (value: string): Ref => {
  const colon = value.indexOf(':');
  return { ns: value.slice(0, colon), id: `${value.slice(colon + 1)}\u0000`.slice(0, -1) };
};

const ds = new Dataset(args.dataset as SizeName, Number(args.seed));
const before = held();
const started = performance.now();
const index = new GrantIndex();
for (const t of ds.triples()) {
  const expiresAt = t.expires_at === undefined ? null : Date.parse(t.expires_at);
  index.add({ subject: refOf(t.subject), relation: t.relation, object: refOf(t.object) }, windowOf(null, expiresAt));
}
index.compact();
index.advance(Date.now());
const loadMs = performance.now() - started;
const bytes = held() - before;
console.log(
  `dataset ${ds.size}: ${index.size} grants (${index.windowedSize} with a window) indexed in ${(loadMs / 1000).toFixed(1)} s; ` +
    `${(bytes / 1e6).toFixed(1)} MB held, ${(bytes / index.size).toFixed(1)} bytes a grant`,
);

const schema = new CompiledSchema(NAMESPACES.map((ns) => ({ name: ns.name, relations: ns.relations })));
const pages = Number(args.pages);
const timed = (name: string, page: (i: number) => string[] | null) => {
  for (let i = 0; i < 20; i++) page(i); // warm-up
  const times: number[] = [];
  let sizes = 0;
  for (let i = 0; i < pages; i++) {
    const start = performance.now();
    sizes += page(i)?.length ?? 0;
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${name}: p50 ${times[pages >> 1]!.toFixed(3)} ms, p95 ${times[Math.floor(pages * 0.95)]!.toFixed(3)} ms (${sizes / pages} ids a page)`,
  );
};
const budget = 1_000_000;
timed('reachable, first page of 100 (objects_first_page)', (i) =>
  index.reachable(schema, {
    subject: { ns: 'user', id: `u${i % WIDE_MEMBERS}` },
    namespace: 'document',
    relation: 'viewer',
    after: null,
    limit: 101,
    budget,
  }),
);
const wideDocs = Array.from({ length: ds.sizes.documents }, (_, d) => d)
  .filter((d) => ds.isWideFolder(ds.folderOf(d)))
  .slice(0, 200);
timed('holders, first page of 100 (subjects_first_page)', (i) =>
  index.holders(schema, {
    object: { ns: 'document', id: `d${wideDocs[i % wideDocs.length]}` },
    relation: 'viewer',
    namespace: 'user',
    after: null,
    limit: 101,
    budget,
  }),
);
