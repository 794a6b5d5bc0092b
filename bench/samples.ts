/** The checks, listings and load bodies a run draws from the dataset. */
import { checkMix, labelled, WIDE_DOCUMENTS, WIDE_MEMBERS, type Dataset, type LabelledCheck, type SizeName } from './dataset.ts';

export type Samples = ReturnType<typeof drawSamples>;
export type LoadBodies = ReturnType<typeof loadBodies>;

/** The checks and listings the run sends and compares, drawn from the dataset. */
export function drawSamples(ds: Dataset, size: SizeName, seed: number, log: (line: string) => void) {
  /** The labelled mix: answers compared with the reference model, Cerbos and (without agents) SpiceDB. */
  const mix = labelled(ds, checkMix(ds, 2_400, seed + 1));
  const agentChecks = mix.filter((c) => c.subject.startsWith('agent:')).length;
  log(
    `dataset ${size} (seed ${seed}); check mix: ${mix.length} checks, ${mix.filter((c) => c.expected).length} expected allowed, ${agentChecks} agent checks`,
  );
  /** SpiceDB sample: the mix without agent checks (scopes cannot be expressed), topped up to 2,000+. */
  const spiceChecks: LabelledCheck[] = mix.filter((c) => !c.subject.startsWith('agent:'));
  for (let extraSeed = seed + 100; spiceChecks.length < 2_000; extraSeed++) {
    spiceChecks.push(...labelled(ds, checkMix(ds, 500, extraSeed)).filter((c) => !c.subject.startsWith('agent:')));
  }
  /** Members of group:wide reaching 10,000 to 20,000 documents (one also reaches a top folder's 10%). */
  const reachOf = new Map(Array.from({ length: WIDE_MEMBERS }, (_, u) => [`user:u${u}`, ds.expectList(`user:u${u}`, 'viewer').length] as const));
  const wideUsers = [...reachOf].filter(([, n]) => n >= WIDE_DOCUMENTS && n < 2 * WIDE_DOCUMENTS).map(([u]) => u);
  const wideReach = `${wideUsers.length} members of group:wide, reaching ${Math.min(...wideUsers.map((u) => reachOf.get(u)!))} to ${Math.max(...wideUsers.map((u) => reachOf.get(u)!))} documents`;
  const listings: { subject: string; relation: string }[] = [
    ...['user:u0', 'user:u7', 'group:wide', 'group:g1', 'group:g2', 'group:g3'].map((subject) => ({ subject, relation: 'viewer' })),
    ...Array.from({ length: 10 }, (_, i) => ({ subject: `user:u${1000 + 37 * i}`, relation: 'viewer' })),
    ...['user:u2000', 'user:u2001'].map((subject) => ({ subject, relation: 'editor' })),
    ...['user:u3000', 'user:u3001'].map((subject) => ({ subject, relation: 'owner' })),
  ];
  return { mix, spiceChecks, wideUsers, wideReach, listings };
}

/**
 * The load pools' request bodies: the mix's kinds in the same proportions, but many more distinct
 * checks, because grantd caches check answers for FRESHNESS_MS (src/config.ts): a small pool cycled
 * at thousands of requests a second would measure that cache rather than the checks.
 */
export function loadBodies(ds: Dataset, seed: number) {
  const loadChecks = checkMix(ds, 100_000, seed + 2);
  const checkBodies = loadChecks.map(({ subject, relation, object }) => JSON.stringify({ subject, relation, object }));
  const bulkChecks = checkMix(ds, 200_000, seed + 3);
  const bulkBodies: string[] = [];
  for (let start = 0; start < bulkChecks.length; start += 100) {
    bulkBodies.push(
      JSON.stringify({ checks: bulkChecks.slice(start, start + 100).map(({ subject, relation, object }) => ({ subject, relation, object })) }),
    );
  }
  return { loadChecks, checkBodies, bulkBodies };
}
