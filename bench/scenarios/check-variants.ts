/** check_at_least and check_token: the check's load with other headers, alternating with the plain check on the same grantd. */
import { CONSISTENCY_HEADER, REVISION_HEADER } from '../../contract/changes.ts';
import type { RunContext } from '../context.ts';
import type { Triple } from '../dataset.ts';
import { Api, clientCredentialsToken } from '../load.ts';
import { fmt, measureAlternating, type RunStats } from '../scenarios.ts';
import { CLOSED_LOOP, checkSpec, headersFor, ratio, saturating, withGrantd, type DatasetContext } from './shared.ts';

/**
 * check_at_least: the check's load, every request reading at the revision of a grant written just
 * before through the same key (docs/consistency.md#reading-at-a-revision); its ratio to check goes in
 * the note. The grant names a subject and an object no check of the load names, so the answers are
 * the check's.
 */
export async function runCheckAtLeast(ctx: RunContext, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { results } = ctx;
  ctx.log('scenario check_at_least (alternating with the plain check on the same grantd)');
  const [stats, plain] = await alternatingWithPlainCheck(ctx, databaseUrl, key, 'check_at_least grantd', 'check grantd, alternating', async (api) => {
    const revision = await writeForRevision(api, { subject: 'user:bench-at-least', relation: 'viewer', object: 'document:bench-at-least' });
    return { ...headersFor(api), [CONSISTENCY_HEADER]: `at-least ${revision}` };
  });
  results.atLeastPlain = plain;
  results.peers.check_at_least_plain = {
    ...results.atLeastPlain,
    note: "the plain check's load on check_at_least's grantd, its runs alternating with check_at_least's",
  };
  ctx.record(
    'check_at_least',
    stats,
    `the check mix and load (${CLOSED_LOOP}), each request with ${CONSISTENCY_HEADER}: at-least <the revision of a grant written through the same key on this grantd before the warm-up>; ` +
      `rps / check rps ${fmt(ratio(stats.rps, results.rows.get('check')?.rps), 3)}; its runs alternate with the plain check's on the same grantd ` +
      `(${fmt(plain.rps, 1)}/s, p50 ${fmt(plain.p50_ms)} ms, errors ${plain.errors}): rps / that ${fmt(ratio(stats.rps, plain.rps), 3)}`,
  );
}

/**
 * The check's mix and load sent with `headersOf`'s headers, its runs alternating with the plain
 * check's (the API key's headers) on the same fresh grantd: [its median, the plain check's].
 */
async function alternatingWithPlainCheck(
  ctx: RunContext,
  databaseUrl: string,
  key: string,
  label: string,
  plainLabel: string,
  headersOf: (api: Api) => Promise<Record<string, string>>,
): Promise<[RunStats, RunStats]> {
  const [variant, plain] = await withGrantd(ctx, databaseUrl, key, async (api) =>
    measureAlternating(
      [
        { label, once: saturating(ctx, label, api, await headersOf(api), checkSpec(ctx)) },
        { label: plainLabel, once: saturating(ctx, plainLabel, api, headersFor(api), checkSpec(ctx)) },
      ],
      ctx.log,
      ctx.options.plan,
    ),
  );
  return [variant!.median, plain!.median];
}

/** POST /v1/grants `grant`; the Grantd-Revision its answer carries. */
async function writeForRevision(api: Api, grant: Triple): Promise<string> {
  const res = await fetch(`${api.url}/v1/grants`, { method: 'POST', headers: api.headers(), body: JSON.stringify(grant) });
  const revision = res.headers.get(REVISION_HEADER);
  if (!res.ok || !revision)
    throw new Error(`POST /v1/grants: ${res.status} ${revision ? '' : `without ${REVISION_HEADER} `}${(await res.text()).slice(0, 300)}`);
  return revision;
}

/**
 * check_token: the check's load authenticated by an OAuth access token instead of the API key, its
 * runs alternating with the same load authenticated by the key on the same grantd (its peer).
 */
export async function runCheckToken(ctx: RunContext, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { results } = ctx;
  ctx.log('scenario check_token (alternating with the same load authenticated by the API key, same grantd)');
  const [stats, byKey] = await alternatingWithPlainCheck(
    ctx,
    databaseUrl,
    key,
    'check_token grantd',
    'check grantd, by key, alternating',
    async (api) => new Api(api.url, await clientCredentialsToken(api, ['check:read'])).headers(),
  );
  results.tokenByKey = byKey;
  results.peers.check_token_by_key = {
    ...byKey,
    note: "the same load authenticated by the API key on check_token's grantd, its runs alternating with check_token's",
  };
  ctx.record(
    'check_token',
    stats,
    `the check mix and load (${CLOSED_LOOP}), authenticated by a client-credentials access token (scope check:read) instead of the API key; ` +
      `rps / check rps ${fmt(ratio(stats.rps, results.rows.get('check')?.rps), 3)}; its runs alternate with the same load authenticated by the key on the same grantd ` +
      `(${fmt(byKey.rps, 1)}/s, p50 ${fmt(byKey.p50_ms)} ms, errors ${byKey.errors}): rps / that ${fmt(ratio(stats.rps, byKey.rps), 3)}`,
  );
}
