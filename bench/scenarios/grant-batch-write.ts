/** Scenario grant_batch_write, alternating with the same load without the changes feed's triggers. */
import type { RunContext } from '../context.ts';
import { switchFeedBackOn } from '../resources.ts';
import { cannon, fmt, measureAlternating } from '../scenarios.ts';
import { changesFeedTriggers, switchTriggers } from '../servers.ts';
import { headersFor, ratio, withGrantd, type DatasetContext } from './shared.ts';

const WRITE_BATCH = 100;

/** Batch i writes 100 grants that exist nowhere else (subject user:bw<i>), so every write is new. */
const writeBody = (documents: number, i: number) =>
  JSON.stringify({
    writes: Array.from({ length: WRITE_BATCH }, (_, k) => ({
      subject: `user:bw${i}`,
      relation: k % 2 ? 'editor' : 'viewer',
      object: `document:d${(i * 7919 + k * 104_729) % documents}`,
    })),
  });

/**
 * grant_batch_write, and its peer: the same load with the changes feed's triggers switched off (what
 * batch writing cost before the feed). One fresh grantd; the two alternate, run by run
 * (measureAlternating), the feed switched off around each of the peer's runs only.
 */
export async function runGrantBatchWrite(ctx: RunContext, { databaseUrl, key }: DatasetContext): Promise<void> {
  const { results } = ctx;
  ctx.log('scenario grant_batch_write (alternating with the same load without the changes feed)');
  const triggers = changesFeedTriggers();
  let writeOffset = 0;
  const [written, withoutFeed] = await withGrantd(ctx, databaseUrl, key, (api) => {
    const write = (d: number) => {
      const offset = writeOffset;
      writeOffset += 1_000_000;
      return cannon(
        api.url,
        headersFor(api),
        { method: 'POST', paths: ['/v1/grants/batch'], bodies: (i) => writeBody(ctx.ds.sizes.documents, offset + i), connections: 8 },
        d,
      );
    };
    const writeWithoutFeed = async (d: number) => {
      ctx.resources.feedSwitchedOff = { url: databaseUrl, triggers };
      await switchTriggers(databaseUrl, triggers, false);
      try {
        return await write(d);
      } finally {
        await switchFeedBackOn(ctx);
      }
    };
    return measureAlternating(
      [
        { label: 'grant_batch_write', once: write },
        { label: 'grant_batch_write without the changes feed', once: writeWithoutFeed },
      ],
      ctx.log,
      ctx.options.plan,
    );
  });
  const switchedOff = `the changes feed's ${triggers.length} triggers (ALTER TABLE ... DISABLE TRIGGER ${triggers.map((t) => `${t.table}.${t.name}`).join(', ')}), switched off around each of its runs and on again right after`;
  const batchWithoutFeed = withoutFeed!.median;
  results.batchWithoutFeed = batchWithoutFeed;
  results.peers.batch_write_without_feed = {
    ...batchWithoutFeed,
    note: `grant_batch_write's load on the same grantd and database without ${switchedOff}`,
  };
  ctx.record(
    'grant_batch_write',
    written!.median,
    `rps = batch calls/s of ${WRITE_BATCH} new grants each (${Math.round(written!.median.rps * WRITE_BATCH)} grants/s), 8 connections; ` +
      `its runs alternate with the peer's, the same load without ${switchedOff}; rps / without the feed ${fmt(ratio(written!.median.rps, batchWithoutFeed.rps), 3)}`,
  );
}
