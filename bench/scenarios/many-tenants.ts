/** Scenario many_tenants (bench/many-tenants.ts): 2,000 tenants of Zipf sizes on one grantd holding a third of their grants. */
import type { RunContext } from '../context.ts';
import { FEED_TRIGGER, manyTenants, type ManyTenantsOutcome } from '../many-tenants.ts';
import { fmt } from '../scenarios.ts';
import { scenarioFailed } from './shared.ts';

export async function runManyTenants(ctx: RunContext, databaseUrl: string): Promise<void> {
  const { log } = ctx;
  log('scenario many_tenants');
  // A failure here ends this scenario, not the run.
  ctx.results.manyTenants = await manyTenants({
    root: ctx.resources.snapshot!.dir,
    databaseUrl,
    workers: ctx.options.workers,
    quick: ctx.options.args.quick,
    workDir: ctx.resources.workDir,
    seed: ctx.options.seed,
    log,
    switchedOff: (off) => (ctx.resources.feedSwitchedOff = off ? { url: databaseUrl, triggers: [FEED_TRIGGER] } : null),
  }).catch(scenarioFailed(ctx, 'many_tenants', log));
  if (ctx.results.manyTenants) recordManyTenants(ctx, ctx.results.manyTenants);
}

function recordManyTenants(ctx: RunContext, m: ManyTenantsOutcome): void {
  const h = m.held;
  ctx.record(
    'many_tenants',
    m.all,
    `${m.tenants} tenants, ${m.grants} grants (largest ${m.largest.join(', ')}), GRANTD_GRAPH_MEMORY=${m.graphMemory} a worker (${m.workers}); ` +
      `${m.rate} checks/s for ${m.seconds} s, tenants by Zipf over a shuffled order; p99 of the second half ${fmt(m.steadyP99)} ms; ` +
      `first check of each tenant (${m.cold.count}): p50 ${fmt(m.cold.p50)} p99 ${fmt(m.cold.p99)} ms; ` +
      `other tenants' checks while one of ${m.duringLoads.loads} loads of 10,000+ grants ran (${m.duringLoads.count}) p99 ${fmt(m.duringLoads.p99)} ms, ` +
      `while none ran (${m.outsideLoads.count}) p99 ${fmt(m.outsideLoads.p99)} ms; ` +
      `held at most ${m.maxHeldGrants} grants and agents over the workers, RSS at most ${m.maxRssMb.toFixed(0)} MB; ` +
      `held at the end: ${h.perWorker.map((w) => `${w.tenants} tenants weighing ${w.weight}`).join(' and ')}; ` +
      `of the 20 most checked ${h.hottestHeld.join('/')}, of the 3 largest ${h.largestHeld.join('/')}; ` +
      `checks per 1,000 grants (median) held ${fmt(h.heldDensity)}, not held ${fmt(h.unheldDensity)}; ` +
      `${h.loads} loads, ${h.displaced} displaced, not held: ${JSON.stringify(h.notHeld)}; ` +
      `sends late p99 ${fmt(m.all.late_p99_ms)} ms`,
  );
}
