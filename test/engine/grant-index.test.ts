import { describe, expect, it } from 'vitest';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { MAX_ARROW_DEPTH } from '../../src/engine/schema-tables.ts';
import { inSlices, WorkMeter } from '../../src/engine/work-meter.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS, grant } from './fixtures.ts';

/** The in-memory index on its own; its agreement with the database's answers is property.test.ts's. */
const schema = new CompiledSchema([
  { name: 'document', relations: DOCUMENT_RELATIONS },
  { name: 'folder', relations: FOLDER_RELATIONS },
  { name: 'group', relations: null },
  { name: 'user', relations: null },
]);

function indexOf(...grants: [string, string, string][]): GrantIndex {
  const index = new GrantIndex();
  for (const g of grants) index.add(grant(...g));
  return index;
}

const check = (index: GrantIndex, subject: string, relation: string, object: string) => index.check(schema, grant(subject, relation, object));

/** One page of the listing walk, unbounded unless a budget is given. */
const reachable = (
  index: GrantIndex,
  subject: string,
  namespace: string,
  relation: string,
  { after = null as string | null, limit = 1000, budget = Infinity } = {},
) => index.reachable(schema, { subject: parseRef(subject, 'subject'), namespace, relation, after, limit, budget });

describe('GrantIndex', () => {
  it('answers a bulk as one check each, on a relation only the schema names (held through an arrow)', async () => {
    // No grant names viewer: the bulk numbers the schema's relations before it reads its queries'.
    const index = indexOf(['folder:f1', 'parent', 'document:d1'], ['user:ann', 'owner', 'document:d1'], ['folder:f1', 'parent', 'folder:f2']);
    const queries = [
      grant('user:ann', 'viewer', 'document:d1'),
      grant('user:bob', 'viewer', 'document:d1'),
      grant('user:ann', 'viewer', 'document:d1'),
      grant('user:ann', 'viewer', 'folder:f2'),
    ];
    const fresh = () => indexOf(['folder:f1', 'parent', 'document:d1'], ['user:ann', 'owner', 'document:d1'], ['folder:f1', 'parent', 'folder:f2']);
    expect(await fresh().checkAll(schema, queries)).toEqual(queries.map((q) => fresh().check(schema, q)));
    expect(await index.checkAll(schema, queries)).toEqual([true, false, true, false]);
  });

  it('counts grants once and forgets removed ones', () => {
    const index = new GrantIndex();
    expect(index.add(grant('user:ann', 'viewer', 'document:d1'))).toBe(true);
    expect(index.add(grant('user:ann', 'viewer', 'document:d1'))).toBe(false);
    expect(index.size).toBe(1);
    expect(check(index, 'user:ann', 'viewer', 'document:d1')).toBe(true);
    expect(index.remove(grant('user:ann', 'viewer', 'document:d1'))).toBe(true);
    expect(index.remove(grant('user:ann', 'viewer', 'document:d1'))).toBe(false);
    expect(index.size).toBe(0);
    expect(check(index, 'user:ann', 'viewer', 'document:d1')).toBe(false);
  });

  it('ends in the same state whatever order flips come in', () => {
    // Logged history: ann added, then removed (the removal committed second); bob, held before, removed.
    const history = [
      grant('user:ann', 'viewer', 'document:d1'),
      grant('user:ann', 'viewer', 'document:d1'),
      grant('user:bob', 'viewer', 'document:d1'),
    ];
    const inOrder = indexOf(['user:bob', 'viewer', 'document:d1']);
    const reversed = indexOf(['user:bob', 'viewer', 'document:d1']);
    for (const change of history) inOrder.flip(change);
    for (const change of [...history].reverse()) reversed.flip(change);
    for (const index of [inOrder, reversed]) {
      expect(check(index, 'user:ann', 'viewer', 'document:d1')).toBe(false);
      expect(check(index, 'user:bob', 'viewer', 'document:d1')).toBe(false);
      expect(index.size).toBe(0);
    }
  });

  it('answers for a relation that no grant names, held through one that includes it', () => {
    const index = indexOf(['user:ann', 'owner', 'document:d1']);
    expect(check(index, 'user:ann', 'viewer', 'document:d1')).toBe(true);
  });

  it('follows includes and arrows, not the other way round', () => {
    const index = indexOf(['user:ann', 'owner', 'document:d1'], ['folder:f1', 'parent', 'document:d2'], ['user:bob', 'viewer', 'folder:f1']);
    expect(check(index, 'user:ann', 'viewer', 'document:d1')).toBe(true);
    expect(check(index, 'user:ann', 'editor', 'document:d1')).toBe(true);
    expect(check(index, 'user:bob', 'viewer', 'document:d2')).toBe(true);
    expect(check(index, 'user:bob', 'editor', 'document:d2')).toBe(false);
    expect(check(index, 'user:ann', 'viewer', 'document:d2')).toBe(false);
  });

  it('gives one level of group membership', () => {
    const index = indexOf(
      ['user:ann', 'member', 'group:eng'],
      ['group:eng', 'member', 'group:all'],
      ['group:eng', 'viewer', 'document:d1'],
      ['group:all', 'viewer', 'document:d2'],
    );
    expect(check(index, 'user:ann', 'viewer', 'document:d1')).toBe(true);
    expect(check(index, 'user:ann', 'viewer', 'document:d2')).toBe(false);
    index.remove(grant('user:ann', 'member', 'group:eng'));
    expect(check(index, 'user:ann', 'viewer', 'document:d1')).toBe(false);
  });

  it(`follows at most ${MAX_ARROW_DEPTH} arrows, and stops on cycles`, () => {
    // folder:f0 is the parent of f1, ..., f(n-1) of document:d; the viewer grant sits on f0.
    const chain = (n: number) => {
      const grants: [string, string, string][] = [['user:ann', 'viewer', 'folder:f0']];
      for (let i = 1; i < n; i++) grants.push([`folder:f${i - 1}`, 'parent', `folder:f${i}`]);
      grants.push([`folder:f${n - 1}`, 'parent', 'document:d']);
      return indexOf(...grants);
    };
    expect(check(chain(MAX_ARROW_DEPTH), 'user:ann', 'viewer', 'document:d')).toBe(true);
    expect(check(chain(MAX_ARROW_DEPTH + 1), 'user:ann', 'viewer', 'document:d')).toBe(false);
    const cycle = indexOf(['folder:a', 'parent', 'folder:b'], ['folder:b', 'parent', 'folder:a'], ['folder:a', 'parent', 'document:d']);
    expect(check(cycle, 'user:ann', 'viewer', 'document:d')).toBe(false);
  });

  it('keeps answering as holders grow past an array and shrink again', () => {
    const index = new GrantIndex();
    const users = Array.from({ length: 40 }, (_, i) => `user:u${i}`);
    for (const u of users) index.add(grant(u, 'viewer', 'document:big'));
    expect(index.add(grant('user:u7', 'viewer', 'document:big'))).toBe(false);
    expect(users.every((u) => check(index, u, 'viewer', 'document:big'))).toBe(true);
    for (const u of users.slice(0, 39)) expect(index.remove(grant(u, 'viewer', 'document:big'))).toBe(true);
    expect(check(index, 'user:u0', 'viewer', 'document:big')).toBe(false);
    expect(check(index, 'user:u39', 'viewer', 'document:big')).toBe(true);
    expect(index.size).toBe(1);
  });

  it('reuses the numbers of subjects and objects no grant names any more, carrying nothing over', () => {
    const index = indexOf(['user:ann', 'member', 'group:eng'], ['group:eng', 'viewer', 'document:d1'], ['user:bob', 'owner', 'document:d2']);
    for (const [s, r, o] of [
      ['user:ann', 'member', 'group:eng'],
      ['group:eng', 'viewer', 'document:d1'],
      ['user:bob', 'owner', 'document:d2'],
    ] as const) {
      expect(index.remove(grant(s, r, o))).toBe(true);
    }
    // New subjects and objects take the freed numbers; none inherits a membership or a grant.
    index.add(grant('user:cat', 'viewer', 'document:d3'));
    index.add(grant('group:ops', 'editor', 'document:d4'));
    index.add(grant('user:dan', 'member', 'group:ops'));
    expect(check(index, 'user:cat', 'viewer', 'document:d3')).toBe(true);
    expect(check(index, 'user:cat', 'viewer', 'document:d4')).toBe(false);
    expect(check(index, 'user:dan', 'viewer', 'document:d4')).toBe(true);
    expect(check(index, 'user:dan', 'viewer', 'document:d3')).toBe(false);
    // Nor does a name that is gone answer for whoever took its number.
    for (const gone of ['user:ann', 'user:bob', 'group:eng']) {
      for (const doc of ['d1', 'd2', 'd3', 'd4']) expect(check(index, gone, 'viewer', `document:${doc}`)).toBe(false);
    }
    expect(index.size).toBe(3);
  });

  it('answers the same once compacted, and through changes after', () => {
    const grants: [string, string, string][] = [
      ['folder:f0', 'parent', 'folder:f1'],
      ['folder:f1', 'parent', 'document:a'],
      ['user:ann', 'viewer', 'folder:f0'],
      ['user:ann', 'member', 'group:eng'],
      ['group:eng', 'editor', 'document:b'],
      ['user:bob', 'owner', 'document:a'],
      ...Array.from({ length: 40 }, (_, i): [string, string, string] => [`user:u${i}`, 'viewer', 'document:b']),
    ];
    const [plain, compacted] = [indexOf(...grants), indexOf(...grants)];
    compacted.compact();
    const answers = (index: GrantIndex) =>
      ['user:ann', 'user:bob', 'user:u3', 'user:cat', 'group:eng'].flatMap((s) =>
        ['viewer', 'editor', 'owner'].flatMap((r) => ['document:a', 'document:b', 'document:c'].map((o) => check(index, s, r, o))),
      );
    expect(answers(compacted)).toEqual(answers(plain));
    for (const index of [plain, compacted]) {
      index.remove(grant('user:ann', 'member', 'group:eng'));
      index.remove(grant('user:u3', 'viewer', 'document:b'));
      index.add(grant('user:cat', 'member', 'group:eng'));
      index.add(grant('user:bob', 'viewer', 'document:c'));
    }
    expect(answers(compacted)).toEqual(answers(plain));
    expect(check(compacted, 'user:cat', 'editor', 'document:b')).toBe(true);
    expect(check(compacted, 'user:ann', 'editor', 'document:b')).toBe(false);
    expect(compacted.size).toBe(plain.size);
  });
});

describe('GrantIndex listing walk', () => {
  /** A folder tree (f0 above f1 above f2), documents in each, grants of every kind, two groups. */
  const tree = () =>
    indexOf(
      ['folder:f0', 'parent', 'folder:f1'],
      ['folder:f1', 'parent', 'folder:f2'],
      ['folder:f0', 'parent', 'document:a'],
      ['folder:f1', 'parent', 'document:b'],
      ['folder:f2', 'parent', 'document:c'],
      ['user:ann', 'viewer', 'folder:f1'],
      ['user:ann', 'owner', 'document:d'],
      ['user:ann', 'member', 'group:eng'],
      ['group:eng', 'editor', 'document:e'],
      ['group:eng', 'member', 'group:all'],
      ['group:all', 'viewer', 'document:f'],
      ['user:bob', 'viewer', 'folder:f0'],
    );
  const everything = ['a', 'b', 'c', 'd', 'e', 'f', 'x'];

  it('lists exactly the objects a check allows, for every subject and relation', () => {
    const index = tree();
    for (const subject of ['user:ann', 'user:bob', 'group:eng', 'group:all', 'folder:f0', 'user:nobody']) {
      for (const relation of ['viewer', 'editor', 'owner', 'parent']) {
        const allowed = everything.filter((id) => check(index, subject, relation, `document:${id}`));
        expect(reachable(index, subject, 'document', relation), `${subject} ${relation}`).toEqual(allowed);
      }
    }
    // ann: b and c through f1 and f2, d as owner, e through her group; not f (groups of groups).
    expect(reachable(index, 'user:ann', 'document', 'viewer')).toEqual(['b', 'c', 'd', 'e']);
    expect(reachable(index, 'user:ann', 'folder', 'viewer')).toEqual(['f1', 'f2']);
  });

  it('pages in byte order after the cursor, also past a page of many', () => {
    const index = new GrantIndex();
    const ids = Array.from({ length: 500 }, (_, i) => `d${String((i * 7919) % 500).padStart(3, '0')}`);
    for (const id of [...ids, 'B', 'a', 'Z-1', 'Z.1']) index.add(grant('user:ann', 'owner', `document:${id}`));
    const all = [...ids, 'B', 'a', 'Z-1', 'Z.1'].sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1));
    expect(all.slice(0, 4)).toEqual(['B', 'Z-1', 'Z.1', 'a']);
    expect(reachable(index, 'user:ann', 'document', 'viewer', { limit: 10 })).toEqual(all.slice(0, 10));
    expect(reachable(index, 'user:ann', 'document', 'viewer', { after: 'd100', limit: 7 })).toEqual(
      all.slice(all.indexOf('d100') + 1, all.indexOf('d100') + 8),
    );
    expect(reachable(index, 'user:ann', 'document', 'viewer', { after: 'd497', limit: 7 })).toEqual(['d498', 'd499']);
    expect(reachable(index, 'user:ann', 'document', 'viewer')).toEqual(all);
  });

  it('pages in byte order through churn: ids ranked by a compaction, named since, forgotten, and numbers reused in another namespace', () => {
    const index = new GrantIndex();
    const held = new Set<string>();
    const ownerOf = (id: string) => grant('user:ann', 'owner', `document:${id}`);
    for (let i = 0; i < 3000; i++) held.add(`d${(i * 7919) % 5000}`);
    for (const id of held) index.add(ownerOf(id));
    index.compact();
    let seed = 7;
    const random = (n: number) => (seed = (seed * 48271) % 2147483647) % n;
    // Enough changes that some listings go by ranks with unranked and stale nodes among them, and some after a ranking again.
    for (let round = 0; round < 12; round++) {
      for (let k = 0; k < 300; k++) {
        const id = `d${random(5000)}`;
        if (held.delete(id)) index.remove(ownerOf(id));
        else if (random(2) === 0) index.add(grant('user:bob', 'viewer', `folder:${id}`));
        else {
          held.add(id);
          index.add(ownerOf(id));
        }
      }
      const all = [...held].sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1));
      const after = all[random(all.length)]!;
      expect(reachable(index, 'user:ann', 'document', 'viewer', { limit: 100 }), `round ${round}`).toEqual(all.slice(0, 100));
      expect(reachable(index, 'user:ann', 'document', 'viewer', { after, limit: 100 }), `round ${round} after ${after}`).toEqual(
        all.slice(all.indexOf(after) + 1, all.indexOf(after) + 101),
      );
      expect(reachable(index, 'user:ann', 'document', 'viewer', { after: `${after}~`, limit: 5 })).toEqual(
        all.filter((id) => id > `${after}~`).slice(0, 5),
      );
    }
  });

  it('pages by cursor right when a forgotten id left its node to another namespace ranked at the same place', () => {
    const index = indexOf(
      ['user:ann', 'owner', 'document:a'],
      ['user:ann', 'owner', 'document:b'],
      ['user:ann', 'owner', 'document:c'],
      ['user:bob', 'viewer', 'folder:zzzz'],
    );
    index.compact();
    index.remove(grant('user:ann', 'owner', 'document:b'));
    // The first folder named takes b's node; enough folders that listing them ranks them, b's node second as b was.
    const folders = Array.from({ length: 1100 }, (_, k) => `f${String(k).padStart(4, '0')}`);
    for (const id of [folders[1]!, ...folders]) index.add(grant('user:bob', 'viewer', `folder:${id}`));
    expect(reachable(index, 'user:bob', 'folder', 'viewer', { limit: 2 })).toEqual(['f0000', 'f0001']);
    // The search for the cursor meets b's stale place first: it must not take the folder's id for b's.
    expect(reachable(index, 'user:ann', 'document', 'viewer', { after: 'c' })).toEqual([]);
    expect(reachable(index, 'user:ann', 'document', 'viewer', { after: 'a' })).toEqual(['c']);
  });

  it('gives up past its budget of (object, relation) pairs', () => {
    const index = tree();
    // bob reaches f0, f1, f2 as viewer and a, b, c as viewer: six pairs.
    expect(reachable(index, 'user:bob', 'document', 'viewer', { budget: 6 })).toEqual(['a', 'b', 'c']);
    expect(reachable(index, 'user:bob', 'document', 'viewer', { budget: 5 })).toBeNull();
  });

  it(`follows at most ${MAX_ARROW_DEPTH} arrows, and stops on cycles`, () => {
    const grants: [string, string, string][] = [['user:ann', 'viewer', 'folder:f0']];
    for (let i = 1; i <= MAX_ARROW_DEPTH; i++) grants.push([`folder:f${i - 1}`, 'parent', `folder:f${i}`]);
    grants.push([`folder:f${MAX_ARROW_DEPTH - 1}`, 'parent', 'document:near'], [`folder:f${MAX_ARROW_DEPTH}`, 'parent', 'document:far']);
    grants.push([`folder:f${MAX_ARROW_DEPTH}`, 'parent', 'folder:f0']);
    const index = indexOf(...grants);
    expect(reachable(index, 'user:ann', 'document', 'viewer')).toEqual(['near']);
    expect(reachable(index, 'user:ann', 'folder', 'viewer')).toHaveLength(MAX_ARROW_DEPTH + 1);
  });

  it('forgets what a removed grant conferred', () => {
    const index = tree();
    index.remove(grant('folder:f1', 'parent', 'folder:f2'));
    index.remove(grant('user:ann', 'member', 'group:eng'));
    expect(reachable(index, 'user:ann', 'document', 'viewer')).toEqual(['b', 'd']);
    index.add(grant('user:ann', 'member', 'group:eng'));
    expect(reachable(index, 'user:ann', 'document', 'viewer')).toEqual(['b', 'd', 'e']);
  });
});

describe('GrantIndex holders walk', () => {
  /** d1's viewers: Bea directly (and as editor), zed as owner, eng's members through f1; dan on d2. */
  const holdersIndex = () =>
    indexOf(
      ['user:zed', 'owner', 'document:d1'],
      ['user:Bea', 'viewer', 'document:d1'],
      ['user:Bea', 'editor', 'document:d1'],
      ['group:eng', 'viewer', 'folder:f1'],
      ['folder:f1', 'parent', 'document:d1'],
      ['user:amy', 'member', 'group:eng'],
      ['group:ops', 'member', 'group:eng'],
      ['user:cy', 'member', 'group:ops'],
      ['user:dan', 'viewer', 'document:d2'],
    );
  const holders = (
    index: GrantIndex,
    object: string,
    relation: string,
    namespace: string,
    { after = null as string | null, limit = 1000, budget = Infinity, admits = undefined as ((id: string) => boolean) | undefined } = {},
  ) => index.holders(schema, { object: parseRef(object, 'object'), relation, namespace, after, limit, budget }, admits);

  it('lists the holders through includes and arrows and the direct members of groups that hold it, once each, in byte order', () => {
    const index = holdersIndex();
    // cy is a member of a member group: groups of groups are not expanded.
    expect(holders(index, 'document:d1', 'viewer', 'user')).toEqual(['Bea', 'amy', 'zed']);
    expect(holders(index, 'document:d1', 'viewer', 'group')).toEqual(['eng', 'ops']);
    expect(holders(index, 'document:d1', 'editor', 'user')).toEqual(['Bea', 'zed']);
    expect(holders(index, 'document:d1', 'owner', 'user')).toEqual(['zed']);
    expect(holders(index, 'document:d2', 'viewer', 'user')).toEqual(['dan']);
    expect(holders(index, 'folder:f1', 'viewer', 'user')).toEqual(['amy']);
  });

  it('lists nothing for an object, a relation or a namespace it does not know', () => {
    const index = holdersIndex();
    expect(holders(index, 'document:d3', 'viewer', 'user')).toEqual([]);
    expect(holders(index, 'document:d1', 'commenter', 'user')).toEqual([]);
    expect(holders(index, 'document:d1', 'viewer', 'robot')).toEqual([]);
  });

  it('pages after the cursor, at most the limit, and lists only the ids admitted', () => {
    const index = holdersIndex();
    expect(holders(index, 'document:d1', 'viewer', 'user', { after: 'Bea' })).toEqual(['amy', 'zed']);
    expect(holders(index, 'document:d1', 'viewer', 'user', { after: 'amy', limit: 1 })).toEqual(['zed']);
    expect(holders(index, 'document:d1', 'viewer', 'user', { after: 'b' })).toEqual(['zed']);
    expect(holders(index, 'document:d1', 'viewer', 'user', { limit: 2 })).toEqual(['Bea', 'amy']);
    const asked: string[] = [];
    const admits = (id: string) => (asked.push(id), id !== 'amy');
    expect(holders(index, 'document:d1', 'viewer', 'user', { admits })).toEqual(['Bea', 'zed']);
    expect(asked).not.toContain('eng');
  });

  it('gives up when the walk, or the pairs, holders and members it reads, come to more than the budget', () => {
    const index = holdersIndex();
    // The walk: d1's viewer, editor and owner pairs, the parent grant read, and f1's viewer pair (5 steps).
    expect(holders(index, 'document:d1', 'viewer', 'user', { budget: 4 })).toBeNull();
    // Then 4 pairs, Bea (once, though she holds two of them) and zed, eng and its 2 members: 9.
    expect(holders(index, 'document:d1', 'viewer', 'user', { budget: 8 })).toBeNull();
    expect(holders(index, 'document:d1', 'viewer', 'user', { budget: 9 })).toEqual(['Bea', 'amy', 'zed']);
  });
});

describe('work an index does in slices', () => {
  const docs = new CompiledSchema([{ name: 'doc', relations: { viewer: {} } }]);
  const listing = (index: GrantIndex, after: string | null) =>
    index.reachable(docs, { subject: parseRef('user:ann', 'subject'), namespace: 'doc', relation: 'viewer', after, limit: 5, budget: 1_000_000 });
  /** ann views 30,000 documents, named in no order. */
  function wideIndex(): GrantIndex {
    const index = new GrantIndex();
    for (let i = 0; i < 30_000; i++) index.add(grant('user:ann', 'viewer', `doc:d${(i * 7919) % 30_000}`));
    return index;
  }

  it('compacts in slices to what it compacts at once, giving way on the way', async () => {
    const [atOnce, sliced] = [wideIndex(), wideIndex()];
    atOnce.compact();
    let gaveWay = false;
    setImmediate(() => (gaveWay = true));
    expect(await inSlices(sliced.compacting(), WorkMeter.unmetered(0))).toBe(true);
    expect(gaveWay).toBe(true);
    for (const after of [null, 'd1', 'd29995', 'd5']) expect(listing(sliced, after)).toEqual(listing(atOnce, after));
    expect(listing(sliced, null)).toEqual(['d0', 'd1', 'd10', 'd100', 'd1000']);
  });

  it("ranks a namespace's ids in slices before a listing, and drops the ranking when the grants change meanwhile", async () => {
    const index = wideIndex();
    index.compact();
    for (let i = 0; i < 10_000; i++) index.add(grant('user:ann', 'viewer', `doc:e${i}`)); // a third unranked: a listing would rank them
    setImmediate(() => index.add(grant('user:ann', 'viewer', 'doc:a-new')));
    expect(await index.rankInSlices('doc', WorkMeter.unmetered(0))).toBe(false);
    expect(listing(index, null)).toEqual(['a-new', 'd0', 'd1', 'd10', 'd100']);
    expect(await index.rankInSlices('doc', WorkMeter.unmetered(0))).toBe(true);
    expect(listing(index, 'd9999')).toEqual(['e0', 'e1', 'e10', 'e100', 'e1000']);
  });
});
