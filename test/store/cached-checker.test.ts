import { describe, expect, it } from 'vitest';
import { overBudget } from '../../src/engine/budget.ts';
import type { CheckAnswer } from '../../src/engine/checker.ts';
import type { Triple } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { CachedChecker } from '../../src/store/cached-checker.ts';
import { grant } from '../engine/fixtures.ts';

const schema = new CompiledSchema([]);
const TENANT = 'tenant';
/** The wall clock's reading when the cache's clock reads 0. */
const WALL_START = Date.UTC(2030, 0, 1);

/** A clock the test moves; the cache's, and (WALL_START later) the server's. Not at 0: lru-cache takes a start of 0 for none. */
class FakeClock {
  at = 1;
  now(): number {
    return this.at;
  }
}

/** A CachedChecker over a checker that answers `answer` and counts the queries it is asked. */
function cachedOver(
  answer: (query: Triple) => CheckAnswer,
  { beforeAnswering = (): void => undefined, until = (): number | undefined => Infinity, clock = new FakeClock() } = {},
) {
  const asked: Triple[] = [];
  const cached = new CachedChecker(
    {
      check: async (_tenantId, _schema, queries) => {
        asked.push(...queries);
        beforeAnswering();
        return { answers: queries.map(answer), until: until() };
      },
    },
    { clock, wallClock: { now: () => WALL_START + clock.now() } },
  );
  return { cached, asked, check: async (...queries: Triple[]) => (await cached.check(TENANT, schema, queries)).answers };
}

const allowed = grant('user:a', 'viewer', 'doc:1');
const denied = grant('user:b', 'viewer', 'doc:1');

describe('CachedChecker', () => {
  it('asks once for an answer, true or false, and only for the queries it does not hold', async () => {
    const { check, asked } = cachedOver((q) => q === allowed);
    expect(await check(allowed, denied)).toEqual([true, false]);
    const other = grant('user:c', 'viewer', 'doc:1');
    expect(await check(denied, other, allowed)).toEqual([false, false, true]);
    expect(asked).toEqual([allowed, denied, other]);
  });

  it('keeps no answer whose delegate does not say until when it holds', async () => {
    const { check, asked } = cachedOver(() => true, { until: () => undefined });
    expect(await check(allowed)).toEqual([true]);
    expect(await check(allowed)).toEqual([true]);
    expect(asked).toHaveLength(2);
  });

  it('keeps no refusal: a check past its budget is asked again', async () => {
    const { check, asked } = cachedOver(() => overBudget(1));
    const [first] = await check(allowed);
    expect(first).toMatchObject({ type: 'check-too-complex' });
    await check(allowed);
    expect(asked).toHaveLength(2);
  });

  it("forgets the tenant's answers when this node writes to it, and keeps none asked meanwhile", async () => {
    let writeWhileAsking = false;
    const over = cachedOver(() => true, { beforeAnswering: () => writeWhileAsking && over.cached.invalidate(TENANT) });
    await over.check(allowed);
    over.cached.invalidate(TENANT);
    await over.check(allowed);
    await over.check(allowed);
    expect(over.asked).toHaveLength(2); // asked again after the write, then kept
    over.cached.invalidate(TENANT);
    writeWhileAsking = true;
    await over.check(allowed);
    writeWhileAsking = false;
    await over.check(allowed);
    await over.check(allowed);
    expect(over.asked).toHaveLength(4); // the answer asked while the node wrote was not kept
  });

  it("keeps no answer past the tenant's next window boundary, and none at all when the boundary is now", async () => {
    const clock = new FakeClock();
    let boundary = WALL_START + 301;
    const over = cachedOver(() => true, { clock, until: () => boundary });
    await over.check(allowed);
    clock.at = 300;
    await over.check(allowed);
    expect(over.asked).toHaveLength(1); // still before the boundary
    clock.at = 301;
    await over.check(allowed);
    expect(over.asked).toHaveLength(2); // the window opened or closed: asked again
    boundary = WALL_START + 301; // the next boundary is already due: nothing is kept
    await over.check(allowed);
    expect(over.asked).toHaveLength(3);
    boundary = Infinity; // no window: kept for the usual time
    clock.at = 400;
    await over.check(allowed);
    clock.at = 900;
    await over.check(allowed);
    expect(over.asked).toHaveLength(4);
  });
});
