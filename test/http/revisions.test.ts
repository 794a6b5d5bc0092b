import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import { encodeRevision, readConsistency } from '../../src/http/revisions.ts';
import type { Db } from '../../src/store/db.ts';
import { Freshness } from '../../src/store/freshness.ts';

const hmacs = vi.hoisted(() => ({ count: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return {
    ...crypto,
    createHmac: (...args: Parameters<typeof crypto.createHmac>) => {
      hmacs.count++;
      return crypto.createHmac(...args);
    },
  };
});

const refusal = (key: Buffer, header: string) => {
  try {
    readConsistency(key, header);
  } catch (error) {
    return error instanceof DomainError ? error.type : error;
  }
  return 'accepted';
};

/** A database that answers every snapshot query with `snapshot`, counting them. */
const snapshotDb = (snapshot: string) => {
  const queries = { count: 0 };
  const db = {
    $queryRaw: () => {
      queries.count++;
      return Promise.resolve([{ snapshot }]);
    },
  } as unknown as Db;
  return { db, queries };
};

/** docs/consistency.md#reading-at-a-revision: a burst of reads at one revision costs one snapshot and one verification. */
describe('reading at a revision this process has already reached', () => {
  it('verifies a revision once, then reads it again without an HMAC; under another key it is refused', () => {
    const key = randomBytes(32);
    const header = `at-least ${encodeRevision(key, { xid: 4242n, seq: 7n })}`;
    const before = hmacs.count;
    expect(readConsistency(key, header)).toBe(4242n);
    expect(hmacs.count).toBe(before + 1);
    for (let i = 0; i < 100; i++) expect(readConsistency(key, header)).toBe(4242n);
    expect(hmacs.count).toBe(before + 1);
    // Remembered under its key only: another tenant's key (or a tenant's new one) verifies it afresh.
    expect(refusal(randomBytes(32), header)).toBe('invalid-revision');
    expect(refusal(key, `${header.slice(0, -1)}${header.endsWith('A') ? 'B' : 'A'}`)).toBe('invalid-revision');
    expect(readConsistency(key, header)).toBe(4242n);
  });

  it('asks the database once for a revision, and not again for it or any older one', async () => {
    const { db, queries } = snapshotDb('100:105:101');
    const dropped: string[] = [];
    const freshness = new Freshness(db, (tenantId) => dropped.push(tenantId));
    expect(await freshness.reach('t1', 99n)).toBe(true);
    for (let i = 0; i < 100; i++) expect(await freshness.reach('t1', i % 2 ? 99n : 50n)).toBe(false);
    expect(queries.count).toBe(1);
    expect(dropped).toEqual(['t1']);
    // Still running in the snapshot remembered: asked again (here it never finishes, so 503).
    const waiting = new Freshness(db, () => undefined, 50);
    await waiting.reach('t1', 99n);
    await expect(waiting.reach('t1', 101n)).rejects.toMatchObject({ type: 'unavailable' });
  });
});
