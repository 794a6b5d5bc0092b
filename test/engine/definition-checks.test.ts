import { describe, expect, it } from 'vitest';
import { assertNoExclusionCycle, relationsByName, validateRelations } from '../../src/engine/definition-checks.ts';
import type { NamespaceDefinition, RelationDefinitions } from '../../src/engine/schema.ts';
import { DomainError } from '../../src/errors.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS } from './fixtures.ts';

/** The problem a call throws: its type, detail and errors; or 'no error'. */
const problemOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error instanceof DomainError ? { type: error.type, detail: error.detail, errors: error.errors } : 'not a DomainError';
  }
  return 'no error';
};
const problemType = (fn: () => unknown) => {
  const problem = problemOf(fn);
  return typeof problem === 'string' ? problem : problem.type;
};

/** The document model of docs/model.md#requires-and-excludes: editor excludes blocked, viewer requires org->member. */
const GUARDED_DOCUMENT: RelationDefinitions = {
  parent: {},
  owner: {},
  blocked: {},
  org: {},
  editor: { includes: ['owner'], excludes: ['blocked'] },
  viewer: { includes: ['editor', 'parent->viewer'], requires: ['org->member'], excludes: ['blocked'] },
};

describe('namespace definitions', () => {
  it('accepts references to declared relations and arrows through declared relations, in every list', () => {
    expect(problemType(() => validateRelations(DOCUMENT_RELATIONS))).toBe('no error');
    expect(problemType(() => validateRelations(GUARDED_DOCUMENT))).toBe('no error');
    expect(problemType(() => validateRelations({}))).toBe('no error');
  });

  it.each([
    ['an undeclared same-object relation', { a: { includes: ['b'] } }],
    ['an arrow through an undeclared relation', { viewer: { includes: ['parent->viewer'] } }],
    ['a self include', { a: { includes: ['a'] } }],
    ['a longer cycle', { a: { includes: ['b'] }, b: { includes: ['c'] }, c: { includes: ['a'] } }],
    ['an undeclared required relation', { a: { requires: ['b'] } }],
    ['an arrow through an undeclared relation under excludes', { a: { excludes: ['parent->a'] } }],
    ['relations requiring each other', { a: { requires: ['b'] }, b: { requires: ['a'] } }],
    ['a cycle of includes and requires', { a: { includes: ['b'] }, b: { requires: ['a'] } }],
    ['a relation excluding itself', { a: { excludes: ['a'] } }],
  ])('rejects %s as invalid-namespace', (_, relations) => {
    expect(problemType(() => validateRelations(relations))).toBe('invalid-namespace');
  });

  it('names the undeclared relation and the path of its reference', () => {
    expect(() => validateRelations({ viewer: { includes: ['parent->viewer'] } })).toThrow(
      'relation viewer includes "parent->viewer", but parent is not declared',
    );
    expect(problemOf(() => validateRelations({ org: {}, viewer: { requires: ['org->member', 'member'] } }))).toEqual({
      type: 'invalid-namespace',
      detail: 'relations.viewer.requires[1]: relation viewer requires "member", but member is not declared',
      errors: [{ path: 'relations.viewer.requires[1]', message: 'relation viewer requires "member", but member is not declared' }],
    });
    expect(problemOf(() => validateRelations({ viewer: { excludes: ['blocked'] } }))).toMatchObject({
      errors: [{ path: 'relations.viewer.excludes[0]' }],
    });
  });

  it('names the cycle from where it closes, with each reference when one is not an include', () => {
    expect(() => validateRelations({ z: { includes: ['a'] }, a: { includes: ['b'] }, b: { includes: ['c'] }, c: { includes: ['a'] } })).toThrow(
      'relations include each other in a cycle: a -> b -> c -> a',
    );
    expect(problemOf(() => validateRelations({ a: { requires: ['b'] }, b: { includes: ['c'] }, c: { requires: ['a'] } }))).toMatchObject({
      detail: expect.stringContaining('cycle, which no grant could end: a requires b -> b includes c -> c requires a -> a'),
      errors: [{ path: 'relations.a.requires[0]' }],
    });
  });

  it('allows an arrow back to the same relation: cycles through data are harmless', () => {
    expect(problemType(() => validateRelations({ parent: {}, viewer: { includes: ['parent->viewer'] } }))).toBe('no error');
    expect(problemType(() => validateRelations({ parent: {}, viewer: { requires: ['parent->viewer'] } }))).toBe('no error');
  });
});

describe('exclusion cycles of a tenant model', () => {
  const model = (...namespaces: [string, RelationDefinitions | null][]): NamespaceDefinition[] =>
    namespaces.map(([name, relations]) => ({ name, relations }));

  it('accepts exclusions off every cycle, and cycles without exclusions', () => {
    const accepted = model(['user', null], ['document', GUARDED_DOCUMENT], ['folder', FOLDER_RELATIONS], ['org', { member: {} }]);
    expect(problemType(() => assertNoExclusionCycle(accepted))).toBe('no error');
    expect(problemType(() => assertNoExclusionCycle([]))).toBe('no error');
  });

  it('refuses an exclusion whose reference leads back through an arrow, naming the cycle', () => {
    const writer = { parent: {}, viewer: { includes: ['writer'] }, writer: { excludes: ['parent->viewer'] } };
    expect(problemOf(() => assertNoExclusionCycle(model(['document', writer])))).toEqual({
      type: 'invalid-namespace',
      detail: expect.stringMatching(/: document#writer excludes parent->viewer -> document#viewer includes writer -> document#writer$/),
      errors: undefined,
    });
  });

  it('follows an arrow to every namespace that declares its relation', () => {
    const document = { parent: {}, viewer: { excludes: ['parent->banned'] } };
    const folder = { child: {}, banned: { includes: ['child->viewer'] } };
    expect(problemOf(() => assertNoExclusionCycle(model(['document', document], ['folder', folder], ['user', null])))).toMatchObject({
      detail: expect.stringContaining('document#viewer excludes parent->banned -> folder#banned includes child->viewer -> document#viewer'),
    });
    // Without the way back, the same exclusion is no cycle.
    expect(problemType(() => assertNoExclusionCycle(model(['document', document], ['folder', { banned: {} }])))).toBe('no error');
  });

  it('refuses a cycle through requires when an exclusion lies on it, and a relation excluding itself', () => {
    const relations = { org: {}, member: { requires: ['org->viewer'] }, viewer: { excludes: ['org->member'] } };
    expect(problemType(() => assertNoExclusionCycle(model(['team', relations])))).toBe('invalid-namespace');
    expect(problemOf(() => assertNoExclusionCycle(model(['team', { a: { excludes: ['a'] } }])))).toMatchObject({
      detail: expect.stringMatching(/: team#a excludes a -> team#a$/),
    });
  });

  it('ignores open namespaces, whose relations refer to nothing', () => {
    const relations = { parent: {}, viewer: { excludes: ['parent->viewer'] } };
    expect(problemType(() => assertNoExclusionCycle(model(['document', { parent: {}, viewer: {} }], ['folder', null])))).toBe('no error');
    // An arrow back to the relation that excludes it is a cycle, even with no grant yet to walk it.
    expect(problemType(() => assertNoExclusionCycle(model(['document', relations])))).toBe('invalid-namespace');
  });

  it('stays linear on a long chain of namespaces', () => {
    const chain = Array.from(
      { length: 100 },
      (_, i) => [`ns${i}`, { parent: {}, r: { includes: ['parent->r'], excludes: ['parent->s'] }, s: {} }] as [string, RelationDefinitions],
    );
    expect(problemType(() => assertNoExclusionCycle(model(...chain)))).toBe('no error');
  });
});

describe('relationsByName', () => {
  it("orders a namespace's relations by name in byte order, upper case first", () => {
    const relations = { viewer: {}, Owner: {}, editor: { includes: ['viewer'] }, b: {}, a: {} };
    expect(relationsByName(relations).map(([name]) => name)).toEqual(['Owner', 'a', 'b', 'editor', 'viewer']);
    expect(relationsByName(relations)[3]).toEqual(['editor', { includes: ['viewer'] }]);
  });
});
