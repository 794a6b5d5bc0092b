/** Scenario check_rules (issue 42): checks of a relation with an exclusion, on a tenant with public documents. */
import type { RunContext } from '../context.ts';
import { BLOCKED_EVERY, PUBLIC_EVERY, rulesMix } from '../dataset.ts';
import { Api } from '../load.ts';
import { RULES_TENANT } from '../rules-tenant.ts';
import { fmt, measureAlternating } from '../scenarios.ts';
import { CLOSED_LOOP, checkSpec, headersFor, ratio, saturating, withGrantd, type DatasetContext } from './shared.ts';

/**
 * check_rules: POST /v1/check of `viewer_unblocked` (viewer, excluding `blocked`) on tenant
 * RULES_TENANT (rulesMix: the check mix's kinds, blocked subjects, users on public documents), at the
 * check's 64 connections, its runs alternating with the plain check's load on the dataset's tenant on
 * the same fresh grantd holding both. The target compares it with `check`'s row; the note gives both ratios.
 */
export async function runCheckRules(ctx: RunContext, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { results } = ctx;
  const tenant = results.rules!;
  const bodies = rulesMix(ctx.ds, 100_000, ctx.options.seed + 4).map(({ subject, relation, object }) =>
    JSON.stringify({ subject, relation, object }),
  );
  ctx.log(`scenario check_rules (alternating with the plain check on the dataset's tenant, same grantd)`);
  const [ruled, plain] = await withGrantd(
    ctx,
    databaseUrl,
    key,
    (api) =>
      measureAlternating(
        [
          {
            label: 'check_rules grantd',
            once: saturating(ctx, 'check_rules grantd', api, new Api(api.url, tenant.key).headers(), { ...checkSpec(ctx), bodies }),
          },
          { label: 'check grantd, alternating with check_rules', once: saturating(ctx, 'check_rules plain', api, headersFor(api), checkSpec(ctx)) },
        ],
        ctx.log,
        ctx.options.plan,
      ),
    { alsoHeld: [tenant.key] },
  );
  results.rulesPlainPeer = plain!.median;
  results.peers.check_rules_plain = {
    ...plain!.median,
    note: `the plain check's mix and load on the dataset's tenant, alternating with check_rules on the same grantd`,
  };
  ctx.record(
    'check_rules',
    ruled!.median,
    `POST /v1/check of viewer_unblocked (viewer excluding blocked) on tenant ${RULES_TENANT}: the check mix's kinds, blocked subjects and users on public documents ` +
      `(every ${BLOCKED_EVERY}th document blocks a user, every ${PUBLIC_EVERY}th is viewed by user:*), ${CLOSED_LOOP}; rps / check rps ${fmt(ratio(ruled!.median.rps, results.rows.get('check')?.rps), 3)}; ` +
      `its runs alternate with the plain check's on the same grantd (${fmt(plain!.median.rps, 1)}/s, p50 ${fmt(plain!.median.p50_ms)} ms, errors ${plain!.median.errors}): rps / that ${fmt(ratio(ruled!.median.rps, plain!.median.rps), 3)}` +
      `${tenant.mismatches + tenant.bulkMismatches > 0 ? `; ${tenant.mismatches} answers of its labelled mix disagree with the model, ${tenant.bulkMismatches} between single and bulk` : ''}`,
  );
}
