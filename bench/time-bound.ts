/**
 * Issue 22's peer tenant (bench/README.md, `check_windows`): the dataset loaded a second time, by
 * the same code path (loadGrantd), with every `expires_at` dropped, so that the check and the bulk
 * on the dataset's tenant (whose every WINDOWED_EVERY-th direct viewer grant has a window) can be
 * measured run by run against the same load on the same grants with no window anywhere: what they
 * cost before time-bound grants.
 */
import type { Dataset, Triple } from './dataset.ts';
import { Api, loadGrantd } from './load.ts';
import { createTenant } from './servers.ts';

export const NO_WINDOWS_TENANT = 'bench-no-windows';

/** The grants as given, without their windows. */
export function* withoutWindows(triples: Iterable<Triple>): Generator<Triple> {
  for (const { subject, relation, object } of triples) yield { subject, relation, object };
}

/** How many of the dataset's grants carry a window. */
export const windowedGrants = (ds: Dataset) => [...ds.triples()].filter((t) => t.expires_at !== undefined).length;

/**
 * Creates the peer tenant (`grantd tenant create`) and loads the dataset into it without windows,
 * through the grantd at `url`; its admin key and how long the load took.
 */
export async function loadWithoutWindows(
  root: string,
  databaseUrl: string,
  url: string,
  ds: Dataset,
  log: (line: string) => void,
): Promise<{ key: string; grants: number; seconds: number }> {
  const key = await createTenant(root, databaseUrl, NO_WINDOWS_TENANT);
  const loaded = await loadGrantd(new Api(url, key), ds, log, withoutWindows(ds.triples()));
  return { key, ...loaded };
}

/** Indexes at which two tenants' answers to the same checks differ (a failed request, null, differs from any answer). */
export const differing = (a: (boolean | null)[], b: (boolean | null)[]): number[] =>
  a.flatMap((answer, i) => (answer === null || answer !== b[i] ? [i] : []));
