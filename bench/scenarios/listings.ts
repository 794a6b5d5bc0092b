/** The listing scenarios: objects_first_page, subjects_first_page, objects_walk, objects_page_1m. */
import { compareLoad, recordCompared, withCompareBuild } from '../compare-build.ts';
import type { RunContext } from '../context.ts';
import { objectsPath, subjectsPath } from '../load.ts';
import { cannon, fmt, measureAlternating, walkFor, type LoadSpec, type RunStats } from '../scenarios.ts';
import { headersFor, objectsSpec, withGrantd, type DatasetContext } from './shared.ts';

export async function runObjectsFirstPage(ctx: RunContext, dataset: DatasetContext): Promise<void> {
  const { wideUsers, wideReach } = ctx.samples;
  ctx.log('scenario objects_first_page');
  const spec = objectsSpec(wideUsers.map((s) => objectsPath(s, 'viewer', 100)));
  ctx.record('objects_first_page', await pages(ctx, 'objects_first_page', dataset, spec), `first page of 100 for ${wideReach}, 8 connections`);
}

/**
 * The first page of 100 viewers of the most widely shared documents the dataset has: those in the
 * folders group:wide views (their folders' and top folders' groups, group:wide's members, and the
 * document's own holders: about a hundred users each).
 */
export async function runSubjectsFirstPage(ctx: RunContext, dataset: DatasetContext): Promise<void> {
  const { ds } = ctx;
  ctx.log('scenario subjects_first_page');
  const shared = Array.from({ length: ds.sizes.documents }, (_, d) => d)
    .filter((d) => ds.isWideFolder(ds.folderOf(d)))
    .slice(0, SHARED_DOCUMENTS)
    .map((d) => subjectsPath(`document:d${d}`, 'viewer', 'user', 100));
  ctx.record(
    'subjects_first_page',
    await pages(ctx, 'subjects_first_page', dataset, objectsSpec(shared)),
    `first page of 100 users viewing one of ${shared.length} documents in group:wide's folders, 8 connections`,
  );
}
const SHARED_DOCUMENTS = 200;

/** A first-page scenario on a fresh grantd, its runs alternating with the compared build's when there is one; this build's figures. */
async function pages(
  ctx: RunContext,
  name: 'objects_first_page' | 'subjects_first_page',
  dataset: DatasetContext,
  spec: LoadSpec,
): Promise<RunStats> {
  const [own, compared] = await withGrantd(ctx, dataset.databaseUrl, dataset.key, (api) =>
    withCompareBuild(ctx, dataset, (other) =>
      measureAlternating(
        [
          { label: name, once: (d: number) => cannon(api.url, headersFor(api), spec, d) },
          ...compareLoad(name, other, (o) => (d) => cannon(o.url, headersFor(o), spec, d)),
        ],
        ctx.log,
        ctx.options.plan,
      ),
    ),
  );
  recordCompared(ctx, name, compared);
  return own!.median;
}

export async function runObjectsWalk(ctx: RunContext, dataset: DatasetContext): Promise<void> {
  const { wideUsers, wideReach } = ctx.samples;
  ctx.log('scenario objects_walk');
  let perWalk = { objects: 0, pages: 0 };
  const [own, compared] = await withGrantd(ctx, dataset.databaseUrl, dataset.key, (api) =>
    withCompareBuild(ctx, dataset, (other) =>
      measureAlternating(
        [
          {
            label: 'objects_walk',
            once: async (d: number) => {
              const r = await walkFor(api, wideUsers, 1000, d);
              perWalk = { objects: Math.round(r.objectsPerWalk), pages: Math.round(r.pagesPerWalk) };
              return r;
            },
          },
          ...compareLoad('objects_walk', other, (o) => (d) => walkFor(o, wideUsers, 1000, d)),
        ],
        ctx.log,
        ctx.options.plan,
      ),
    ),
  );
  recordCompared(ctx, 'objects_walk', compared);
  const walked = own!.median;
  ctx.record(
    'objects_walk',
    walked,
    `rps = objects/s walking whole listings of the ${wideReach} (${perWalk.objects} objects in ${perWalk.pages} pages of up to 1000 per walk, one client, one page after another; one walk takes ${walked.rps > 0 ? (perWalk.objects / walked.rps).toFixed(2) : '-'} s); p* = per page`,
  );
}

/**
 * objects_page_1m: a page deep in group:all's listing (size L only), its runs alternating with its
 * peer's, the first page of the same listing: a keyset page costs what a first page does.
 */
export async function runObjectsDeepPage(ctx: RunContext, { databaseUrl, key, deepCursors }: DatasetContext): Promise<void> {
  const { ds, results } = ctx;
  if (!ds.sizes.allGroup || deepCursors.length === 0) {
    ctx.record('objects_page_1m', null, ds.sizes.allGroup ? 'no deep cursor could be obtained (see notes)' : 'size L only');
    return;
  }
  ctx.log('scenario objects_page_1m (alternating with the first page of the same listing)');
  const page = (cursors: (string | undefined)[]) => objectsSpec(cursors.map((c) => objectsPath('group:all', 'viewer', 100, c)));
  const [deep, first] = await withGrantd(ctx, databaseUrl, key, (api) =>
    measureAlternating(
      [
        { label: 'objects_page_1m', once: (d) => cannon(api.url, headersFor(api), page(deepCursors), d) },
        { label: "objects_page_1m's listing, first page", once: (d) => cannon(api.url, headersFor(api), page([undefined]), d) },
      ],
      ctx.log,
      ctx.options.plan,
    ),
  );
  const firstPage = first!.median;
  results.deepListingFirstPage = firstPage;
  results.peers.objects_page_1m_first_page = {
    ...firstPage,
    note: "the first page of objects_page_1m's listing, its runs alternating with objects_page_1m's",
  };
  ctx.record(
    'objects_page_1m',
    deep!.median,
    `a page of 100 deep in the listing of group:all (1,000,000 documents), 8 connections; its runs alternate with the first page of the same listing's (p50 ${fmt(firstPage.p50_ms)} ms)`,
  );
}
