/**
 * grantd's garbage-collection pauses over a stretch of a run, read from its /metrics (prom-client's
 * `nodejs_gc_duration_seconds`, every worker's added up): how many, and how many of them long
 * enough to show in a latency tail.
 */

/** Collections counted by the upper bound of their pause, in seconds ("+Inf" last). */
export type GcCounts = Map<string, number>;

const BUCKET = /^grantd_nodejs_gc_duration_seconds_bucket\{([^}]*)\} (\d+)/;

/** Collections so far, by pause bucket, over every kind (minor, major, incremental, weakcb). */
export async function gcCounts(url: string): Promise<GcCounts> {
  const response = await fetch(`${url}/metrics`);
  if (!response.ok) throw new Error(`GET /metrics: ${response.status}`);
  const counts: GcCounts = new Map();
  for (const line of (await response.text()).split('\n')) {
    const match = BUCKET.exec(line);
    const le = match && /le="([^"]+)"/.exec(match[1]!)?.[1];
    if (le) counts.set(le, (counts.get(le) ?? 0) + Number(match[2]));
  }
  return counts;
}

export interface GcPauses {
  collections: number;
  /** Pauses longer than 1 ms. */
  long: number;
  /**
   * At most how many requests of an open loop at `rate` a second those pauses held up: a pause
   * delays what falls due during it, and each counts at its bucket's upper bound.
   */
  delayedAtMost: number;
}

/** A pause this long (seconds) or longer could show in a check's latency tail. */
const LONG_S = 0.001;

/** The pauses between two readings, for a load offered at `rate` requests a second. */
export function gcPausesBetween(before: GcCounts, after: GcCounts, rate: number): GcPauses {
  const atMost = (le: string) => (after.get(le) ?? 0) - (before.get(le) ?? 0);
  const bounds = [...after.keys()].filter((le) => le !== '+Inf').sort((a, b) => Number(a) - Number(b));
  const collections = atMost('+Inf');
  let long = 0;
  let delayedAtMost = 0;
  bounds.forEach((le, i) => {
    if (Number(le) < LONG_S) return;
    const upper = bounds[i + 1];
    const inBucket = (upper === undefined ? collections : atMost(upper)) - atMost(le);
    long += inBucket;
    // Counted at its bucket's upper bound; one in the open last bucket could have held up any number.
    if (inBucket > 0) delayedAtMost += inBucket * (Math.ceil(Number(upper ?? Infinity) * rate) + 1);
  });
  return { collections, long, delayedAtMost };
}
