import { describe, expect, it } from 'vitest';
import { overBudget } from '../../src/engine/budget.ts';
import type { CheckAnswer } from '../../src/engine/engine.ts';
import type { Triple } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { CachedChecker } from '../../src/store/cached-checker.ts';
import { grant } from '../engine/fixtures.ts';

const schema = new CompiledSchema([]);
const TENANT = 'tenant';

/** A CachedChecker over a checker that answers `answer` and counts the queries it is asked. */
function cachedOver(answer: (query: Triple) => CheckAnswer, { beforeAnswering = (): void => undefined } = {}) {
  const asked: Triple[] = [];
  const cached = new CachedChecker({
    check: async (_tenantId, _schema, queries) => {
      asked.push(...queries);
      beforeAnswering();
      return queries.map(answer);
    },
  });
  return { cached, asked, check: (...queries: Triple[]) => cached.check(TENANT, schema, queries) };
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
});
