import { describe, expect, it } from 'vitest';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS, grant } from './fixtures.ts';

/**
 * The listing walks of an index (listing-walks.ts) at their edges, with no database
 * (docs/decisions.md#mutation-testing): what their budgets count, what they skip, where they page.
 * grant-index.test.ts has their ordinary answers; property.test.ts their agreement with PostgreSQL.
 */
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

const reachable = (index: GrantIndex, subject: string, namespace: string, relation: string, { after = null as string | null, budget = 1000 } = {}) =>
  index.reachable(schema, { subject: parseRef(subject, 'subject'), namespace, relation, after, limit: 100, budget });

const holders = (index: GrantIndex, object: string, relation: string, namespace: string, { after = null as string | null, budget = 1000 } = {}) =>
  index.holders(schema, { object: parseRef(object, 'object'), relation, namespace, after, limit: 100, budget });

describe('the walk forwards (reachable)', () => {
  it('passes over the grants of a held object that no arrow follows, and arrows into namespaces that confer nothing', () => {
    const index = indexOf(
      ['user:ann', 'viewer', 'folder:f1'],
      // f1 owns a document (no arrow follows owner from a folder) and is the parent of a group (no arrow into group) and of a document.
      ['folder:f1', 'owner', 'document:owned'],
      ['folder:f1', 'parent', 'group:g'],
      ['folder:f1', 'parent', 'document:inside'],
    );
    expect(reachable(index, 'user:ann', 'document', 'viewer')).toEqual(['inside']);
    expect(reachable(index, 'user:ann', 'group', 'viewer')).toEqual([]);
  });
});

describe('the walk backwards (holders)', () => {
  const index = () =>
    indexOf(
      ['user:ann', 'viewer', 'document:d'],
      ['user:bob', 'owner', 'document:d'],
      ['group:eng', 'editor', 'document:d'],
      ['user:cat', 'member', 'group:eng'],
      ['user:dan', 'member', 'group:eng'],
      ['folder:f', 'parent', 'document:d'],
      ['user:eve', 'viewer', 'folder:f'],
    );

  it('lists the holders and their groups’ members, ascending, after the cursor', () => {
    const held = index();
    expect(holders(held, 'document:d', 'viewer', 'user')).toEqual(['ann', 'bob', 'cat', 'dan', 'eve']);
    held.compact();
    // Ranked ids page by rank: after 'bob' (ranked) and after 'cow' (between two).
    expect(holders(held, 'document:d', 'viewer', 'user', { after: 'bob' })).toEqual(['cat', 'dan', 'eve']);
    expect(holders(held, 'document:d', 'viewer', 'user', { after: 'cow' })).toEqual(['dan', 'eve']);
  });

  it('lists none for an object, relation or namespace nobody names', () => {
    const held = index();
    expect(holders(held, 'document:nowhere', 'viewer', 'user')).toEqual([]);
    expect(holders(held, 'document:d', 'reader', 'user')).toEqual([]);
    expect(holders(held, 'document:d', 'viewer', 'robot')).toEqual([]);
  });

  it('gives up when the holders and members it reads pass its budget', () => {
    // The walk: viewer, editor, owner on d, f through parent->viewer, viewer on f (4 pairs); then the
    // holders ann, bob, eng and eve, and eng's two members: 10 in all.
    const held = index();
    expect(holders(held, 'document:d', 'viewer', 'user', { budget: 10 })).toEqual(['ann', 'bob', 'cat', 'dan', 'eve']);
    expect(holders(held, 'document:d', 'viewer', 'user', { budget: 9 })).toBeNull();
  });

  it('gives up when its walk passes its budget, the grants its arrows read counted', () => {
    // 3 pairs on d, 5 parent grants read, 5 pairs viewer on a folder: 13 steps; then 8 pairs and ann read.
    const held = indexOf(
      ['user:ann', 'viewer', 'document:d'],
      ...[1, 2, 3, 4, 5].map((i): [string, string, string] => [`folder:f${i}`, 'parent', 'document:d']),
    );
    expect(holders(held, 'document:d', 'viewer', 'user', { budget: 13 })).toEqual(['ann']);
    expect(holders(held, 'document:d', 'viewer', 'user', { budget: 12 })).toBeNull();
  });

  it("gives null when the namespace's `*` holds: every subject of it does, which the walk cannot list", () => {
    const held = index();
    held.add(grant('user:*', 'viewer', 'folder:f'));
    expect(holders(held, 'document:d', 'viewer', 'user')).toBeNull();
    expect(holders(held, 'document:d', 'viewer', 'group')).toEqual(['eng']);
  });
});
