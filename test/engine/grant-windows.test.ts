import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { inForce, readWindow, sameWindow, type GrantWindow } from '../../src/engine/grant-window.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { assertProperty, scaled } from '../properties.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS, grant } from './fixtures.ts';

/** Grants with windows in the in-memory index, on a clock the tests set (advance). */
const schema = new CompiledSchema([
  { name: 'document', relations: DOCUMENT_RELATIONS },
  { name: 'folder', relations: FOLDER_RELATIONS },
  { name: 'team', relations: null },
  { name: 'user', relations: null },
]);

const window = (notBefore: number | null, expiresAt: number | null): GrantWindow => ({ notBefore, expiresAt });
const check = (index: GrantIndex, now: number, subject: string, relation: string, object: string) => {
  index.advance(now);
  return index.check(schema, grant(subject, relation, object));
};
const listed = (index: GrantIndex, now: number, subject: string) => {
  index.advance(now);
  return index.reachable(schema, {
    subject: parseRef(subject, 'subject'),
    namespace: 'document',
    relation: 'viewer',
    after: null,
    limit: 100,
    budget: Infinity,
  });
};

describe('GrantIndex with windows', () => {
  it('holds a windowed grant from not_before on and before expires_at, to the millisecond, directly, through a group and an arrow', () => {
    const index = new GrantIndex();
    const w = window(1000, 2000);
    index.add(grant('user:ann', 'viewer', 'document:d1'), w);
    index.add(grant('user:bob', 'member', 'team:t1'), w);
    index.add(grant('team:t1', 'viewer', 'document:d2'));
    index.add(grant('folder:f1', 'parent', 'document:d3'), w);
    index.add(grant('user:cat', 'viewer', 'folder:f1'));
    const answers = (now: number) => [
      check(index, now, 'user:ann', 'viewer', 'document:d1'),
      check(index, now, 'user:bob', 'viewer', 'document:d2'),
      check(index, now, 'user:cat', 'viewer', 'document:d3'),
      ...['user:ann', 'user:bob', 'user:cat'].map((s) => listed(index, now, s)!.length === 1),
    ];
    for (const [now, held] of [
      [999, false],
      [1000, true],
      [1999, true],
      [2000, false],
      [1500, true], // the clock set back
      [0, false],
    ] as const) {
      expect(answers(now)).toEqual(Array(6).fill(held));
    }
    expect(index.windowedSize).toBe(3);
  });

  it('replays a replaced window in any order, as a delete of the old and an insert of the new', () => {
    const g = grant('user:ann', 'viewer', 'document:d1');
    const [old, next] = [window(null, 5000), window(3000, null)];
    // Created with `old`, then replaced by `next`: flips (old), (old), (next) in every order end holding `next` alone.
    const flips = [old, old, next];
    for (const order of [
      [0, 1, 2],
      [2, 0, 1],
      [0, 2, 1],
      [2, 1, 0],
    ]) {
      const index = new GrantIndex();
      for (const i of order) index.flip(g, flips[i]);
      expect([check(index, 2999, 'user:ann', 'viewer', 'document:d1'), check(index, 6000, 'user:ann', 'viewer', 'document:d1')]).toEqual([
        false,
        true,
      ]);
      expect(index.windowedSize).toBe(1);
    }
    // A window removed and the plain grant written: no window left, the grant in force forever.
    const index = new GrantIndex();
    index.flip(g, old);
    index.flip(g, old);
    index.flip(g, null);
    expect(index.windowedSize).toBe(0);
    expect(check(index, 10_000, 'user:ann', 'viewer', 'document:d1')).toBe(true);
    expect(index.remove(g)).toBe(true);
    expect(check(index, 10_000, 'user:ann', 'viewer', 'document:d1')).toBe(false);
  });

  it('adds a window once, and beside a grant held without one holds it for ever until removed', () => {
    const index = new GrantIndex();
    const g = grant('user:ann', 'viewer', 'document:d1');
    expect(index.add(g, window(1000, 2000))).toBe(true);
    expect(index.add(g, window(1000, 2000))).toBe(false);
    expect(index.windowedSize).toBe(1);
    expect(index.add(g, window(3000, null))).toBe(true);
    expect([500, 1500, 2500, 3500].map((now) => check(index, now, 'user:ann', 'viewer', 'document:d1'))).toEqual([false, true, false, true]);
    const plain = new GrantIndex();
    plain.add(g);
    expect(plain.add(g, window(1000, 2000))).toBe(true);
    expect(plain.add(g, window(1000, 2000))).toBe(false);
    expect(plain.add(g)).toBe(false);
    expect(plain.windowedSize).toBe(1);
    expect([500, 2500].map((now) => check(plain, now, 'user:ann', 'viewer', 'document:d1'))).toEqual([true, true]);
    // Its window flipped away, the grant is plain again: held, and no longer counted as windowed.
    plain.flip(g, window(1000, 2000));
    expect([plain.windowedSize, plain.size, check(plain, 2500, 'user:ann', 'viewer', 'document:d1')]).toEqual([0, 1, true]);
    expect(plain.remove(g)).toBe(true);
    expect([plain.windowedSize, plain.size, check(plain, 1500, 'user:ann', 'viewer', 'document:d1')]).toEqual([0, 0, false]);
  });

  it("weighs a windowed grant three grants more than a plain one in the index's footprint, in force or not, and nothing once removed", () => {
    const g = grant('user:ann', 'viewer', 'document:d1');
    const plain = new GrantIndex();
    plain.add(g);
    const windowed = new GrantIndex();
    windowed.add(g, window(1000, 2000));
    windowed.advance(1500);
    expect(windowed.footprint).toBe(plain.footprint + 3);
    windowed.advance(2500);
    expect(windowed.footprint).toBe(plain.footprint + 3 - 1);
    plain.remove(g);
    windowed.remove(g);
    // Both keep the names they interned (until a sweep): the grant and its window weigh nothing more.
    expect(windowed.footprint).toBe(plain.footprint);
    expect(plain.footprint).toBe(new GrantIndex().footprint + 4 * 3);
  });

  it('names the grants none of whose windows is in force at the instant advanced to, once each, with a window of theirs', () => {
    const index = new GrantIndex();
    index.add(grant('user:ann', 'viewer', 'document:d1'), window(1000, 2000));
    index.add(grant('user:ann', 'viewer', 'document:d1'), window(3000, 4000));
    index.add(grant('user:bob', 'viewer', 'document:d1'), window(null, 2500));
    index.add(grant('user:cat', 'viewer', 'document:d1'));
    index.add(grant('user:dan', 'viewer', 'document:d1'), window(5000, null));
    const named = (now: number) => {
      index.advance(now);
      return index.outOfForce().map(({ grant: g, window: w }) => [g.subject.id, g.relation, g.object.id, w.notBefore, w.expiresAt]);
    };
    const dan = ['dan', 'viewer', 'd1', 5000, null];
    expect(named(1500)).toEqual([dan]);
    expect(named(2700)).toEqual([['ann', 'viewer', 'd1', 1000, 2000], ['bob', 'viewer', 'd1', null, 2500], dan]);
    expect(named(3500)).toEqual([['bob', 'viewer', 'd1', null, 2500], dan]);
  });

  it('agrees with the windows, at any instant, whatever the grants and the order in which the clock is read', async () => {
    const bound = fc.option(fc.integer({ min: 0, max: 20 }), { nil: null });
    const grantArb = fc.tuple(
      fc.constantFrom('user:ann', 'user:bob'),
      fc.constantFrom('viewer', 'member'),
      fc.constantFrom('document:d1', 'user:bob', 'team:t1'),
      bound,
      bound,
    );
    await assertProperty(
      fc.asyncProperty(
        fc.uniqueArray(grantArb, { selector: ([s, r, o]) => `${s} ${r} ${o}`, maxLength: 8 }),
        fc.array(fc.integer({ min: -1, max: 22 }), { maxLength: 12 }),
        async (grants, instants) => {
          const index = new GrantIndex();
          const windowed = grants.map(([s, r, o, nb, exp]) => ({
            g: grant(s, r, o),
            w: nb !== null && exp !== null && exp <= nb ? null : nb === null && exp === null ? null : window(nb, exp),
          }));
          for (const { g, w } of windowed) index.add(g, w);
          for (const now of instants) {
            index.advance(now);
            const inForceNow = new GrantIndex();
            for (const { g, w } of windowed) if (inForce(w, now)) inForceNow.add(g);
            for (const subject of ['user:ann', 'user:bob']) {
              for (const object of ['document:d1', 'team:t1']) {
                expect(index.check(schema, grant(subject, 'viewer', object))).toBe(inForceNow.check(schema, grant(subject, 'viewer', object)));
              }
            }
          }
        },
      ),
      { numRuns: scaled(200) },
    );
  });
});

describe('readWindow', () => {
  it('reads ISO 8601 UTC times to the millisecond and names each bad field under its prefix', () => {
    expect(readWindow({ not_before: '2030-01-01T00:00:00.123456Z', expires_at: null }, 0, 'body.')).toEqual({
      window: { notBefore: Date.UTC(2030, 0, 1) + 123, expiresAt: null },
      problems: [],
    });
    expect(readWindow({}, 0, 'body.')).toEqual({ window: null, problems: [] });
    expect(readWindow({ not_before: '2030-01-01', expires_at: '2030-01-01T00:00:00Z' }, Date.UTC(2031, 0, 1), 'writes[2].').problems).toEqual([
      { path: 'writes[2].not_before', message: expect.stringMatching(/ISO 8601 UTC/) },
      { path: 'writes[2].expires_at', message: 'must be in the future' },
    ]);
    expect(readWindow({ not_before: '2030-01-02T00:00:00Z', expires_at: '2030-01-01T00:00:00Z' }, 0, '').problems).toEqual([
      { path: 'expires_at', message: 'must be after not_before' },
    ]);
  });

  it('refuses an expires_at at now or at not_before, times a date parser would take but are not ISO 8601 UTC, year 0 and days a month lacks', () => {
    const problems = (input: Parameters<typeof readWindow>[0], now = 0) => readWindow(input, now, '');
    const at = Date.UTC(2030, 0, 1);
    expect(problems({ expires_at: '2030-01-01T00:00:00Z' }, at)).toEqual({
      window: null,
      problems: [{ path: 'expires_at', message: 'must be in the future' }],
    });
    expect(problems({ expires_at: '2030-01-01T00:00:00.001Z' }, at)).toEqual({ window: { notBefore: null, expiresAt: at + 1 }, problems: [] });
    expect(problems({ not_before: '2030-01-01T00:00:00Z', expires_at: '2030-01-01T00:00:00Z' }).problems).toEqual([
      { path: 'expires_at', message: 'must be after not_before' },
    ]);
    expect(problems({ not_before: '2030-01-01T00:00:00Z' })).toEqual({ window: { notBefore: at, expiresAt: null }, problems: [] });
    expect(problems({ not_before: '2030-01-01T00:00:00Z', expires_at: '2030-01-01T00:00:00.001Z' })).toEqual({
      window: { notBefore: at, expiresAt: at + 1 },
      problems: [],
    });
    for (const value of [
      '2030-01-01T00:00:00.000+00:00',
      '2030-01-01T00:00:00',
      '0000-01-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-13-01T00:00:00Z',
    ]) {
      expect(problems({ not_before: value }), value).toEqual({
        window: null,
        problems: [{ path: 'not_before', message: expect.stringMatching(/ISO 8601 UTC/) }],
      });
    }
    // A bad not_before leaves no window, even beside a good expires_at.
    expect(problems({ not_before: 'soon', expires_at: '2030-01-01T00:00:00Z' }).window).toBeNull();
  });
});

describe('sameWindow', () => {
  it('is the same bounds on both sides, none on either counting as a bound', () => {
    const w = (notBefore: number | null, expiresAt: number | null): GrantWindow => ({ notBefore, expiresAt });
    expect(sameWindow(null, null)).toBe(true);
    expect(sameWindow(w(1, 2), w(1, 2))).toBe(true);
    expect(sameWindow(w(null, 2), w(null, 2))).toBe(true);
    expect(sameWindow(null, w(null, null))).toBe(false);
    expect(sameWindow(w(null, null), null)).toBe(false);
    expect(sameWindow(w(1, 2), w(1, 3))).toBe(false);
    expect(sameWindow(w(1, 2), w(0, 2))).toBe(false);
    expect(sameWindow(w(null, 2), w(1, 2))).toBe(false);
  });
});
