/**
 * The dataset loaded through a first grantd process (which bootstraps the admin key), and that
 * grantd's answers to the samples, collected right after the load.
 */
import type { RunContext } from './context.ts';
import type { Triple } from './dataset.ts';
import { Api, grantdAnswers, loadGrantd, walkListing } from './load.ts';
import { compareRules, loadRulesTenant, RULES_TENANT, rulesSample } from './rules-tenant.ts';
import { startGrantd, vacuumDatabase } from './servers.ts';
import { differing, loadWithoutWindows, NO_WINDOWS_TENANT, windowedGrants } from './time-bound.ts';

/** grantd's answers to the samples, collected right after the load. */
export interface GrantdAnswers {
  /** The labelled mix, one by one and in bulk. */
  mix: Awaited<ReturnType<typeof grantdAnswers>>;
  /** SpiceDB's sample. */
  spice: Awaited<ReturnType<typeof grantdAnswers>>;
  /** Each listing's object ids, null where the walk failed. */
  listings: (string[] | null)[];
}

/**
 * Loads the dataset through a first grantd process (which bootstraps the admin key) and collects its
 * answers; returns the admin key, the answers and the cursors deep in group:all's listing (L only).
 */
export async function loadDataset(ctx: RunContext, databaseUrl: string): Promise<{ key: string; answers: GrantdAnswers; deepCursors: string[] }> {
  const { ds, log, note } = ctx;
  const first = await startGrantd(ctx.resources.snapshot!.dir, databaseUrl, ctx.options.workers);
  if (!first.adminKey) throw new Error(`grantd printed no admin key:\n${first.proc.output()}`);
  const key = first.adminKey;
  try {
    const api = new Api(first.url, key);
    log('loading grantd');
    const loaded = await loadGrantd(api, ds, log);
    ctx.heldPerProcess = loaded.grants + ds.sizes.agents;
    note(
      `grantd load: ${loaded.grants} grants + ${ds.sizes.agents} agents in ${loaded.seconds.toFixed(1)} s (${Math.round(loaded.grants / loaded.seconds)} grants/s, batches of 1000, 4 in flight${ctx.results.spiceError ? '' : ', SpiceDB loading at the same time'})`,
    );
    const peerKey = ctx.options.needsNoWindows ? await loadNoWindowsTenant(ctx, databaseUrl, first.url) : null;
    const rulesKey = ctx.options.needsRules ? await loadRules(ctx, databaseUrl, first.url) : null;
    const autovacuum = await vacuumDatabase(databaseUrl);
    note(`ran VACUUM ANALYZE once after the load, as autovacuum would (autovacuum is ${autovacuum} on this PostgreSQL)`);
    const answers = await collectAnswers(ctx, api, ctx.samples.spiceChecks);
    if (peerKey) await compareNoWindowsAnswers(ctx, new Api(first.url, peerKey), answers);
    if (rulesKey) await compareRulesAnswers(ctx, new Api(first.url, rulesKey));
    return { key, answers, deepCursors: await deepCursorsOf(ctx, api) };
  } finally {
    await first.proc.stop();
  }
}

/** Tenant NO_WINDOWS_TENANT, the dataset without windows (check_windows' peer), loaded through the same grantd; its key. */
async function loadNoWindowsTenant({ ds, log, note, resources }: RunContext, databaseUrl: string, url: string): Promise<string> {
  log(`loading tenant ${NO_WINDOWS_TENANT}: the dataset again, every expires_at dropped`);
  const loaded = await loadWithoutWindows(resources.snapshot!.dir, databaseUrl, url, ds, log);
  note(
    `tenant ${NO_WINDOWS_TENANT} (check_windows' peer): the same ${loaded.grants} grants + ${ds.sizes.agents} agents without the ${windowedGrants(ds)} windows, loaded the same way in ${loaded.seconds.toFixed(1)} s`,
  );
  return loaded.key;
}

/** Tenant RULES_TENANT (check_rules), loaded through the same grantd; its key. */
async function loadRules({ ds, log, note, resources }: RunContext, databaseUrl: string, url: string): Promise<string> {
  log(`loading tenant ${RULES_TENANT}: the dataset again, with blocked grants, public documents and viewer_unblocked`);
  const loaded = await loadRulesTenant(resources.snapshot!.dir, databaseUrl, url, ds, log);
  note(
    `tenant ${RULES_TENANT} (check_rules): ${loaded.grants} grants (the dataset's and ${[...ds.rulesTriples()].length} blocked and public ones) + ${ds.sizes.agents} agents, loaded the same way in ${loaded.seconds.toFixed(1)} s`,
  );
  return loaded.key;
}

/** Tenant RULES_TENANT's answers to check_rules' labelled mix against the reference model: what makes its figure meaningful. */
async function compareRulesAnswers({ ds, note, options, results }: RunContext, api: Api): Promise<void> {
  const sample = rulesSample(ds, options.seed);
  const { mismatches, bulkMismatches, first } = await compareRules(api, sample);
  results.rules = { key: api.key, mismatches, bulkMismatches };
  results.peers.rules = {
    tenant: RULES_TENANT,
    sample_checks: sample.length,
    allowed: sample.filter((c) => c.expected).length,
    model_mismatches: mismatches,
    check_vs_bulk_mismatches: bulkMismatches,
  };
  note(
    `tenant ${RULES_TENANT} vs the reference model on check_rules' ${sample.length} labelled checks (${sample.filter((c) => c.expected).length} allowed): ${mismatches} disagreements${first.length ? ` (${first.join('; ')})` : ''}; single vs bulk: ${bulkMismatches}`,
  );
}

/**
 * The windows are far in the future: tenant NO_WINDOWS_TENANT must answer the labelled mix as the
 * dataset's tenant does, one by one and in bulk. Disagreements go to peers.windows and the notes,
 * and make the windows targets not meaningful.
 */
async function compareNoWindowsAnswers({ ds, note, results, samples: { mix } }: RunContext, peer: Api, answers: GrantdAnswers): Promise<void> {
  const peerAnswers = await grantdAnswers(peer, mix);
  const differ = [...new Set([...differing(answers.mix.single, peerAnswers.single), ...differing(answers.mix.bulk, peerAnswers.bulk)])];
  results.noWindows = { key: peer.key, differing: differ.length };
  results.peers.windows = {
    tenant: NO_WINDOWS_TENANT,
    windowed_grants: windowedGrants(ds),
    sample_checks: mix.length,
    answers_differing: differ.length,
  };
  const first = differ.slice(0, 3).map((i) => `${mix[i]!.subject} ${mix[i]!.relation} ${mix[i]!.object}`);
  note(
    `tenant ${NO_WINDOWS_TENANT} vs the dataset's tenant on the ${mix.length} checks of the labelled mix, single and bulk: ${differ.length} differing${first.length ? ` (${first.join('; ')})` : ''}`,
  );
}

/** A grantd's answers to the labelled mix, `spiceChecks` (SpiceDB's sample, or none) and the listings. */
export async function collectAnswers({ log, note, samples: { mix, listings } }: RunContext, api: Api, spiceChecks: Triple[]): Promise<GrantdAnswers> {
  log(`collecting grantd's answers: ${mix.length + spiceChecks.length} checks, one by one and in bulk`);
  const mixAnswers = await grantdAnswers(api, mix);
  const spiceAnswers = await grantdAnswers(api, spiceChecks);
  const failures = [...mixAnswers.failures, ...spiceAnswers.failures];
  if (failures.length > 0) note(`${failures.length} check requests failed while collecting answers, first: ${failures[0]}`);
  log(`walking ${listings.length} listings`);
  const listingAnswers: (string[] | null)[] = [];
  for (const l of listings) {
    const walked = await walkListing(api, l.subject, l.relation, 1000).catch((error: unknown) => {
      note(`grantd listing ${l.subject} ${l.relation} failed: ${String(error).slice(0, 200)}`);
      return null;
    });
    listingAnswers.push(walked?.ids ?? null);
  }
  return { mix: mixAnswers, spice: spiceAnswers, listings: listingAnswers };
}

/** Cursors 9,000 to 10,000 objects before the end of a 500,000-object walk of group:all (size L only). */
async function deepCursorsOf({ ds, log, note }: RunContext, api: Api): Promise<string[]> {
  if (!ds.sizes.allGroup) return [];
  log('walking group:all (1,000,000 documents) for deep cursors');
  const started = performance.now();
  const deep = await walkListing(api, 'group:all', 'viewer', 1000, 500_000).catch((error: unknown) => {
    note(`walking group:all failed: ${String(error)}`);
    return { ids: [], cursors: [], complete: false };
  });
  const deepCursors = deep.cursors.slice(-10);
  if (deepCursors.length > 0)
    note(
      `objects_page_1m: cursors at ${deep.ids.length - 9000}..${deep.ids.length} objects deep (walk to there took ${((performance.now() - started) / 1000).toFixed(0)} s)`,
    );
  return deepCursors;
}
