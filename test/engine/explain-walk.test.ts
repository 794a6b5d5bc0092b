import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { explainCheck, indexGraph } from '../../src/engine/explain.ts';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import type { Triple } from '../../src/engine/refs.ts';
import { MAX_ARROW_DEPTH } from '../../src/engine/schema-tables.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { assertProperty, scaled } from '../properties.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS, grant } from './fixtures.ts';

/**
 * explain's walk (explain-walk.ts) over an index, with no database (docs/decisions.md#mutation-testing):
 * it allows what the check allows (explain.test.ts has its paths, reasons and budgets on hand-made
 * graphs); and the paths it names.
 */
const NOW = Date.parse('2026-11-28T12:00:00Z');

/** Built in each test, not as the file loads: explain makes its tables once per schema (mutation runs credit tests with what they run). */
const schemaOf = () =>
  new CompiledSchema([
    { name: 'document', relations: DOCUMENT_RELATIONS },
    { name: 'folder', relations: FOLDER_RELATIONS },
    { name: 'group', relations: null },
    { name: 'user', relations: null },
  ]);

const SUBJECTS = ['user:u0', 'user:u1', 'group:g0', 'group:g1', 'folder:f0', 'folder:f1'];
const HELD = [
  ...['d0', 'd1'].flatMap((id) => ['parent', 'owner', 'editor', 'viewer'].map((relation) => [relation, `document:${id}`])),
  ...['f0', 'f1', 'f2'].flatMap((id) => ['parent', 'viewer'].map((relation) => [relation, `folder:${id}`])),
  ...['g0', 'g1'].map((id) => ['member', `group:${id}`]),
];
const tripleArb = fc
  .tuple(fc.constantFrom(...SUBJECTS, 'user:*'), fc.constantFrom(...HELD))
  .map(([subject, [relation, object]]) => grant(subject, relation!, object!));
const queryArb = fc
  .tuple(fc.constantFrom(...SUBJECTS, 'user:u2'), fc.constantFrom(...HELD))
  .map(([subject, [relation, object]]) => grant(subject, relation!, object!));

function indexOf(grants: readonly Triple[]): GrantIndex {
  const index = new GrantIndex();
  for (const g of grants) index.add(g);
  return index;
}

describe("explain's walk over an index", () => {
  it('allows what the check allows, wherever neither is past its budget', async () => {
    // Their refusals differ by a few steps (docs/measurements.md, 2026-11-28, session 27): a check of a
    // subject or object no grant names is denied at no step, where explain walks the schema's pairs; a
    // check counts the namespace's `*`, when some grant names it, as one of the subject's groups, and
    // explain does not. So a budget of 25,000 here, which no walk of these tenants reaches.
    await assertProperty(
      fc.asyncProperty(fc.array(tripleArb, { maxLength: 14 }), queryArb, async (grants, query) => {
        const schema = schemaOf();
        const index = indexOf(grants);
        const explained = await explainCheck(
          indexGraph(index, () => undefined),
          schema,
          query,
          25_000,
          NOW,
        );
        expect(explained.allowed).toBe(index.check(schema, query, 25_000));
      }),
      { numRuns: scaled(300) },
    );
  });

  const explainIn = (grants: Triple[], query: Triple, schema = schemaOf()) =>
    explainCheck(
      indexGraph(indexOf(grants), () => undefined),
      schema,
      query,
      1000,
      NOW,
    );

  it("names a group's grant with the membership to it, whatever the group's namespace or id", async () => {
    // A subject in the namespace of its group, and one whose id is its group's.
    const grants = [
      grant('group:team', 'member', 'group:all'),
      grant('group:all', 'viewer', 'document:d0'),
      grant('user:all', 'member', 'group:all'),
    ];
    for (const subject of ['group:team', 'user:all']) {
      expect((await explainIn(grants, grant(subject, 'viewer', 'document:d0'))).path).toEqual([
        { subject, relation: 'member', object: 'group:all', via: 'member' },
        { subject: 'group:all', relation: 'viewer', object: 'document:d0', via: 'direct' },
      ]);
    }
  });

  it('follows each arrow to its own target, back along the pairs that led to it', async () => {
    const schema = new CompiledSchema([
      { name: 'document', relations: { parent: {}, team: {}, owner: {}, viewer: { includes: ['owner', 'parent->viewer', 'team->member'] } } },
      { name: 'team', relations: null },
      { name: 'user', relations: null },
    ]);
    // d0's parents d1 and d2 (the second pair of its level reached through d2); d2's team t1, of which ann is a member.
    const grants = [
      grant('document:d1', 'parent', 'document:d0'),
      grant('document:d2', 'parent', 'document:d0'),
      grant('team:t1', 'team', 'document:d2'),
      grant('user:ann', 'member', 'team:t1'),
    ];
    expect(await explainIn(grants, grant('user:ann', 'viewer', 'document:d0'), schema)).toEqual({
      allowed: true,
      reason: null,
      path: [
        { subject: 'user:ann', relation: 'member', object: 'team:t1', via: 'direct' },
        { subject: 'team:t1', relation: 'team', object: 'document:d2', via: 'arrow:team->member' },
        { subject: 'document:d2', relation: 'parent', object: 'document:d0', via: 'arrow:parent->viewer' },
      ],
    });
  });

  it(`follows at most ${MAX_ARROW_DEPTH} arrows`, async () => {
    const chain = (length: number) => [
      grant('user:ann', 'viewer', 'folder:f0'),
      ...Array.from({ length }, (_, i) => grant(`folder:f${i}`, 'parent', `folder:f${i + 1}`)),
    ];
    expect((await explainIn(chain(MAX_ARROW_DEPTH), grant('user:ann', 'viewer', `folder:f${MAX_ARROW_DEPTH}`))).allowed).toBe(true);
    const far = `folder:f${MAX_ARROW_DEPTH + 1}`;
    expect((await explainIn(chain(MAX_ARROW_DEPTH + 1), grant('user:ann', 'viewer', far))).allowed).toBe(false);
  });
});
