import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import { encodeCursor } from '../../src/http/cursor.ts';
import { decodeRevision, encodeRevision, encodeRevisions, readConsistency } from '../../src/http/revisions.ts';
import type { Db } from '../../src/store/db.ts';
import { Freshness } from '../../src/store/freshness.ts';

const openings = vi.hoisted(() => ({ count: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return {
    ...crypto,
    createDecipheriv: (...args: Parameters<typeof crypto.createDecipheriv>) => {
      openings.count++;
      return crypto.createDecipheriv(...args);
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
  it('opens a revision once, then reads it again without opening it; under another key it is refused', () => {
    const key = randomBytes(32);
    const header = `at-least ${encodeRevision(key, { xid: 4242n, seq: 7n })}`;
    const before = openings.count;
    expect(readConsistency(key, header)).toBe(4242n);
    expect(openings.count).toBe(before + 1);
    for (let i = 0; i < 100; i++) expect(readConsistency(key, header)).toBe(4242n);
    expect(openings.count).toBe(before + 1);
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

/** docs/consistency.md#revisions: a revision is sealed, so nothing is read from it and nothing edited into it. */
describe('a revision as a caller sees it', () => {
  const key = randomBytes(32);
  const opening = (token: string, withKey = key) => {
    try {
      return decodeRevision(withKey, token);
    } catch (error) {
      return error instanceof DomainError ? error.type : error;
    }
  };

  it('opens to the position it was made of, from the first to the last of a transaction', () => {
    for (const position of [
      { xid: 0n, seq: 0n },
      { xid: 779n, seq: 18n },
      { xid: 2n ** 62n, seq: 2n ** 63n - 1n },
    ]) {
      expect(opening(encodeRevision(key, position))).toEqual(position);
    }
  });

  it('seals a page of positions as it seals each alone', () => {
    const positions = Array.from({ length: 40 }, (_, i) => ({ xid: 700n + BigInt(i % 7), seq: BigInt(i) }));
    expect(encodeRevisions(key, positions)).toEqual(positions.map((position) => encodeRevision(key, position)));
    expect(encodeRevisions(key, [])).toEqual([]);
  });

  it('shows neither the transaction nor the sequence; one position gives one token, each another', () => {
    const token = encodeRevision(key, { xid: 779n, seq: 18n });
    expect(encodeRevision(key, { xid: 779n, seq: 18n })).toBe(token);
    const neighbours = [
      { xid: 779n, seq: 19n },
      { xid: 780n, seq: 18n },
    ].map((position) => encodeRevision(key, position));
    expect(new Set([token, ...neighbours]).size).toBe(3);
    expect(encodeRevision(randomBytes(32), { xid: 779n, seq: 18n })).not.toBe(token);
    for (const issued of [token, ...neighbours]) {
      expect(issued).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const bytes = Buffer.from(issued, 'base64url');
      expect(bytes.toString('latin1')).not.toMatch(/779|780/);
      expect(bytes.includes(Buffer.from([0, 0, 0, 0, 0, 0, 3, 11]))).toBe(false);
    }
  });

  it('refuses a token edited anywhere, cut, lengthened, padded or of another tenant', () => {
    const token = encodeRevision(key, { xid: 4243n, seq: 9n });
    const flip = (i: number) => `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
    for (let i = 0; i < token.length; i++) expect(opening(flip(i))).toBe('invalid-revision');
    for (const edited of [token.slice(0, -1), `${token}A`, `${token}=`, ` ${token}`, `${token.slice(0, 20)}+${token.slice(21)}`, '']) {
      expect(opening(edited)).toBe('invalid-revision');
    }
    expect(opening(token, randomBytes(32))).toBe('invalid-revision');
  });

  it('still opens a signed revision issued before revisions were sealed, and refuses one edited', () => {
    const signed = encodeCursor(key, 'revision', ['812', '40']);
    expect(opening(signed)).toEqual({ xid: 812n, seq: 40n });
    expect(opening(signed, randomBytes(32))).toBe('invalid-revision');
    const payload = Buffer.from(JSON.stringify(['813', '40'])).toString('base64url');
    expect(opening(`${payload}${signed.slice(signed.indexOf('.'))}`)).toBe('invalid-revision');
    expect(opening(encodeCursor(key, 'revision', ['x', '40']))).toBe('invalid-revision');
    expect(opening(encodeCursor(key, 'another query', ['812', '40']))).toBe('invalid-revision');
  });
});
