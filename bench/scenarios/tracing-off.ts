/** Scenario check_tracing_off (issue 26): what tracing off costs a check, against a grantd with tracing on. */
import type { RunContext } from '../context.ts';
import { median, fmt, measureAlternating, type RunStats } from '../scenarios.ts';
import { treeCpuSeconds, type Server } from '../servers.ts';
import { inSpanOffNs } from '../tracing-off-cost.ts';
import { spansPerCheck, startTracingSink } from '../tracing-sink.ts';
import { CLOSED_LOOP, checkSpec, headersFor, ratio, saturating, withGrantd, type DatasetContext } from './shared.ts';

/** Checks of the labelled mix sent through the traced grantd to count the spans a check makes. */
const TRACE_PROBE_CHECKS = 100;

/**
 * check_tracing_off (issue 26): the check's load on a grantd with tracing off (the default),
 * alternating run by run with the same load on a second grantd exporting spans to a local sink
 * (its peer); the off grantd's server CPU a check over its runs, against what inSpan's off branch
 * costs a call times the inSpan sites a check passes (internal spans a traced check makes).
 */
export async function runCheckTracingOff(ctx: RunContext, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { results } = ctx;
  ctx.log('scenario check_tracing_off (alternating with the same load on a grantd with tracing on)');
  const offNs = await inSpanOffNs(ctx.resources.snapshot!.dir);
  const sink = await startTracingSink();
  try {
    const { off, on, perCheck, spansInRuns, tracedAnswered } = await withGrantd(ctx, databaseUrl, key, (offApi, offServer) =>
      withGrantd(
        ctx,
        databaseUrl,
        key,
        async (onApi) => {
          const perCheck = await spansPerCheck(sink, onApi, ctx.samples.mix.slice(0, TRACE_PROBE_CHECKS));
          const before = totalSpans(sink.spans());
          const traced = saturating(ctx, 'check tracing on', onApi, headersFor(onApi), checkSpec(ctx));
          let tracedAnswered = 0;
          // Only the off grantd's runs carry its server CPU.
          const [off, on] = await measureAlternating<RunStats & { cpu_us_per_request?: number | null }>(
            [
              {
                label: 'check, tracing off',
                once: withServerCpu(offServer, saturating(ctx, 'check tracing off', offApi, headersFor(offApi), checkSpec(ctx))),
              },
              {
                label: 'check, tracing on',
                once: async (durationS: number) => {
                  const stats = await traced(durationS);
                  tracedAnswered += stats.rps * stats.seconds;
                  return stats;
                },
              },
            ],
            ctx.log,
            ctx.options.plan,
          );
          // The batch exporter sends what it holds every 5 s (OTEL_BSP_SCHEDULE_DELAY's default).
          await new Promise((resolve) => setTimeout(resolve, 6_000));
          return { off: off!, on: on!, perCheck, spansInRuns: totalSpans(sink.spans()) - before, tracedAnswered };
        },
        { settings: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } },
      ),
    );
    const sites = perCheck.internal ?? 0;
    const cpuUs = median(off.runs.map((r) => r.cpu_us_per_request ?? null));
    results.tracingOffShare = cpuUs ? (100 * offNs * sites) / (cpuUs * 1000) : null;
    results.tracingOnCheck = on.median;
    // Fewer than a probe check's spans a check answered under load: the batch processor drops what outruns its queue.
    const spansPerTracedCheck = tracedAnswered > 0 ? spansInRuns / tracedAnswered : null;
    results.peers.check_tracing_on = {
      ...on.median,
      spans_per_check: perCheck,
      spans_received_in_runs: spansInRuns,
      unreadable_exports: sink.unreadable(),
      note: `the check's load on a second grantd with OTEL_EXPORTER_OTLP_ENDPOINT at a local sink (bench/tracing-sink.ts), alternating with check_tracing_off`,
    };
    results.peers.tracing_off_cost = {
      in_span_off_ns: offNs,
      in_span_sites_per_check: sites,
      check_server_cpu_us: cpuUs,
      share_pct: results.tracingOffShare,
    };
    ctx.record(
      'check_tracing_off',
      off.median,
      `the check's mix and load (${CLOSED_LOOP}) on a grantd with tracing off; its runs alternate with the same load on a grantd exporting spans (peer): ` +
        `rps off / on ${fmt(ratio(off.median.rps, on.median.rps), 3)}; a traced check makes ${Object.entries(perCheck)
          .map(([kind, n]) => `${fmt(n)} ${kind}`)
          .join(', ')} spans ` +
        `(${TRACE_PROBE_CHECKS} probe checks in one trace), and the sink got ${spansInRuns} spans over the traced warm-up and runs (${fmt(spansPerTracedCheck)} a check answered); ` +
        `off: inSpan's off branch ${fmt(offNs)} ns a call x ${fmt(sites)} sites a check = ${fmt(offNs * sites)} ns, of ${fmt(cpuUs, 1)} µs of server CPU a check (tracing off, median of its runs)`,
    );
  } finally {
    await sink.close();
  }
}

const totalSpans = (byKind: Record<string, number>) => Object.values(byKind).reduce((sum, n) => sum + n, 0);

/** A run of `once` that also reports the server's CPU µs an answered request (utime + stime of its processes, from /proc). */
const withServerCpu =
  <T extends RunStats>(server: Server, once: (durationS: number) => Promise<T>) =>
  async (durationS: number): Promise<T & { cpu_us_per_request: number | null }> => {
    const pid = server.proc.child.pid!;
    const before = treeCpuSeconds(pid);
    const stats = await once(durationS);
    const answered = stats.rps * stats.seconds;
    return { ...stats, cpu_us_per_request: answered > 0 ? ((treeCpuSeconds(pid) - before) * 1e6) / answered : null };
  };
