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

  it('names the grants none of whose windows is in force at the instant advanced to, once each, with a window of theirs, by pair and by subject', () => {
    const index = new GrantIndex();
    index.add(grant('user:ann', 'viewer', 'document:d1'), window(1000, 2000));
    index.add(grant('user:ann', 'viewer', 'document:d1'), window(3000, 4000));
    index.add(grant('user:bob', 'viewer', 'document:d1'), window(null, 2500));
    index.add(grant('user:cat', 'viewer', 'document:d1'));
    index.add(grant('user:dan', 'viewer', 'document:d1'), window(5000, null));
    index.add(grant('user:dan', 'editor', 'document:d1'), window(5000, null));
    index.add(grant('user:ann', 'member', 'team:t1'), window(null, 2500));
    index.add(grant('user:ann', 'member', 'team:t2'), window(3000, null));
    index.add(grant('user:ann', 'viewer', 'document:d2'), window(null, 2500));
    const named = (now: number) => {
      index.advance(now);
      const byId = <T extends { window: GrantWindow }>(found: readonly T[], ref: (t: T) => { id: string }) =>
        found.map((t) => [ref(t).id, t.window.notBefore, t.window.expiresAt]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
      return {
        viewers: byId(index.outOfForceOn(parseRef('document:d1', 'object'), 'viewer'), (t) => t.subject),
        editors: byId(index.outOfForceOn(parseRef('document:d1', 'object'), 'editor'), (t) => t.subject),
        groups: byId(index.outOfForceMemberships(parseRef('user:ann', 'subject')), (t) => t.object),
        holding: ['user:ann', 'user:bob', 'user:cat', 'user:dan'].filter((s) => index.holdsOutOfForce(parseRef(s, 'subject'))),
      };
    };
    expect(named(1500)).toEqual({
      viewers: [['dan', 5000, null]],
      editors: [['dan', 5000, null]],
      groups: [['t2', 3000, null]],
      holding: ['user:ann', 'user:dan'],
    });
    expect(named(2700)).toEqual({
      viewers: [
        ['ann', 1000, 2000],
        ['bob', null, 2500],
        ['dan', 5000, null],
      ],
      editors: [['dan', 5000, null]],
      groups: [
        ['t1', null, 2500],
        ['t2', 3000, null],
      ],
      holding: ['user:ann', 'user:bob', 'user:dan'],
    });
    expect(named(3500)).toEqual({
      viewers: [
        ['bob', null, 2500],
        ['dan', 5000, null],
      ],
      editors: [['dan', 5000, null]],
      groups: [['t1', null, 2500]],
      holding: ['user:ann', 'user:bob', 'user:dan'],
    });
    // Removed, a grant is out of force nowhere; nor is one on a pair or of a subject the index has never seen.
    index.remove(grant('user:bob', 'viewer', 'document:d1'));
    index.remove(grant('user:ann', 'member', 'team:t1'));
    index.remove(grant('user:ann', 'viewer', 'document:d2'));
    expect(named(3500)).toEqual({ viewers: [['dan', 5000, null]], editors: [['dan', 5000, null]], groups: [], holding: ['user:dan'] });
    expect(index.outOfForceOn(parseRef('document:none', 'object'), 'viewer')).toEqual([]);
    expect(index.outOfForceOn(parseRef('document:d1', 'object'), 'owner')).toEqual([]);
    expect(index.holdsOutOfForce(parseRef('user:zed', 'subject'))).toBe(false);
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

describe('GrantIndex windows under writes, removals, replays and a clock moved in slices', () => {
  const SUBJECTS = ['user:ann', 'user:bob', 'team:t1'];
  const RELATIONS = ['viewer', 'member'];
  const OBJECTS = ['document:d1', 'team:t1', 'team:t2'];
  const key = (s: string, r: string, o: string) => `${s} ${r} ${o}`;
  const boundArb = fc.option(fc.integer({ min: 0, max: 10 }), { nil: null });
  const windowArb = fc
    .tuple(boundArb, boundArb)
    .map(([nb, exp]) => (nb === null && exp === null ? null : window(nb, exp !== null && nb !== null && exp <= nb ? null : exp)));
  const tripleArb = fc.tuple(fc.constantFrom(...SUBJECTS), fc.constantFrom(...RELATIONS), fc.constantFrom(...OBJECTS));
  const opArb = fc.oneof(
    fc.record({ op: fc.constantFrom('add' as const, 'flip' as const), triple: tripleArb, window: windowArb }),
    fc.record({ op: fc.constant('remove' as const), triple: tripleArb }),
    fc.record({ op: fc.constant('advance' as const), now: fc.integer({ min: -1, max: 11 }), maxEvents: fc.integer({ min: 0, max: 3 }) }),
  );

  it('holds in the lists exactly the grants one of whose windows is in force, and names the others by pair and by subject, once an advance ends', async () => {
    await assertProperty(
      fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), async (ops) => {
        const index = new GrantIndex();
        /** The model: each grant's windows as add, flip and remove leave them (null: the grant without one). */
        const model = new Map<string, (GrantWindow | null)[]>();
        let [now, atNow] = [0, true];
        const agrees = () => {
          const outOn = new Map<string, string[]>();
          const memberships = new Map<string, string[]>();
          for (const s of SUBJECTS) {
            for (const r of RELATIONS) {
              for (const o of OBJECTS) {
                const windows = model.get(key(s, r, o)) ?? [];
                const held = windows.some((w) => inForce(w, now));
                expect(index.holds(grant(s, r, o)), `${key(s, r, o)} at ${now}`).toBe(held);
                if (windows.length === 0 || held) continue;
                outOn.set(`${o} ${r}`, [...(outOn.get(`${o} ${r}`) ?? []), s]);
                if (r === 'member') memberships.set(s, [...(memberships.get(s) ?? []), o]);
              }
            }
          }
          for (const o of OBJECTS) {
            for (const r of RELATIONS) {
              const found = index.outOfForceOn(parseRef(o, 'object'), r);
              expect(found.map((f) => `${f.subject.ns}:${f.subject.id}`).sort()).toEqual((outOn.get(`${o} ${r}`) ?? []).sort());
              for (const { subject, window: w } of found) {
                expect(model.get(key(`${subject.ns}:${subject.id}`, r, o))!.some((held) => sameWindow(held, w))).toBe(true);
              }
            }
          }
          for (const s of SUBJECTS) {
            const subject = parseRef(s, 'subject');
            expect(
              index
                .outOfForceMemberships(subject)
                .map((f) => `${f.object.ns}:${f.object.id}`)
                .sort(),
            ).toEqual((memberships.get(s) ?? []).sort());
            expect(index.holdsOutOfForce(subject)).toBe([...outOn.values()].some((subjects) => subjects.includes(s)));
          }
          const windowed = [...model.values()].filter((ws) => ws.length > 0 && !(ws.length === 1 && ws[0] === null)).length;
          expect(index.windowedSize).toBe(windowed);
        };
        /** What add and remove answered, against the model: compared after the steps. */
        const told: { step: (typeof ops)[number]; answered: boolean; expected: boolean }[] = [];
        for (const step of ops) {
          if (step.op === 'advance') {
            now = step.now;
            atNow = index.advance(now, step.maxEvents);
          } else {
            const [s, r, o] = step.triple;
            const windows = model.get(key(s, r, o)) ?? [];
            if (step.op === 'remove') {
              told.push({ step, answered: index.remove(grant(s, r, o)), expected: windows.length > 0 });
              model.delete(key(s, r, o));
            } else {
              const at = windows.findIndex((held) => sameWindow(held, step.window));
              if (step.op === 'add') told.push({ step, answered: index.add(grant(s, r, o), step.window), expected: at < 0 });
              else index.flip(grant(s, r, o), step.window);
              const next = at < 0 ? [...windows, step.window] : step.op === 'flip' ? windows.filter((_, i) => i !== at) : windows;
              if (next.length > 0) model.set(key(s, r, o), next);
              else model.delete(key(s, r, o));
            }
          }
          // Mid-advance the lists stand between two instants: only a finished advance is compared.
          if (atNow) agrees();
        }
        expect(told.filter(({ answered, expected }) => answered !== expected)).toEqual([]);
        while (!index.advance(now, 1));
        agrees();
      }),
      { numRuns: scaled(300) },
    );
  });

  it('crosses each window boundary in O(log k) steps, forwards and back, and writes k windowed grants on one object in O(k log k)', () => {
    const k = scaled(20_000);
    const expiry = (n: number) => 1_000_000 + 5 * n;
    const hot = (n: number) => grant(`user:s${n}`, 'viewer', 'document:hot');
    const index = new GrantIndex();
    index.advance(0);
    for (let n = 0; n < k; n++) index.add(hot(n), window(null, expiry(n)));
    const log = Math.ceil(Math.log2(k));
    expect(index.windowWork).toBeLessThanOrEqual(k * (1 + log));
    expect(index.size).toBe(k);
    // Each advance crosses one expiry: it pops it, re-evaluates its grant alone, and keeps it among those passed.
    for (let n = 0; n < k; n++) {
      const before = index.windowWork;
      expect(index.advance(expiry(n))).toBe(true);
      expect(index.windowWork - before, `advance across expiry ${n}`).toBeLessThanOrEqual(2 * log + 1);
    }
    expect([index.size, index.outOfForceOn(parseRef('document:hot', 'object'), 'viewer').length]).toEqual([0, k]);
    // The clock stepped back across 100 expiries: 100 boundaries crossed back, no rebuild.
    let before = index.windowWork;
    expect(index.advance(expiry(k - 100) - 1)).toBe(true);
    expect(index.windowWork - before).toBeLessThanOrEqual(100 * (2 * log + 1));
    expect([index.size, check(index, expiry(k - 100) - 1, `user:s${k - 100}`, 'viewer', 'document:hot')]).toEqual([100, true]);
    // In slices of at most 10 boundaries, each slice's work bounded by them.
    let slices = 0;
    for (let done = false; !done; slices++) {
      before = index.windowWork;
      done = index.advance(expiry(k), 10);
      expect(index.windowWork - before).toBeLessThanOrEqual(10 * (2 * log + 1));
    }
    expect([slices, index.size]).toEqual([10, 0]);
    // A write on the hot object costs O(log k) too, and so does its removal.
    before = index.windowWork;
    index.add(hot(k), window(null, expiry(2 * k)));
    index.remove(hot(0));
    expect(index.windowWork - before).toBeLessThanOrEqual(2 * log + 2);
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
