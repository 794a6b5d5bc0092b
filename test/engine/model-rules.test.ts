import { describe, expect, it } from 'vitest';
import { ModelRules } from '../../src/engine/model-rules.ts';
import { CompiledSchema, type NamespaceDefinition } from '../../src/engine/schema.ts';
import { RULED_DOCUMENT_RELATIONS } from './fixtures.ts';

/** Which relations a walk answers alone, and the rules of the others (docs/model.md#requires-and-excludes). */
describe('ModelRules', () => {
  /** docs/model.md's worked example. */
  const document: NamespaceDefinition = { name: 'document', relations: RULED_DOCUMENT_RELATIONS };
  const org: NamespaceDefinition = { name: 'org', relations: { member: {} } };
  const user: NamespaceDefinition = { name: 'user', relations: null };

  it('keeps the rules of the ruled relations, with the includes the plain walk leaves to them', () => {
    const rules = new ModelRules([document, org, user]);
    const reference = (text: string) => expect.objectContaining({ text });
    expect(rules.any).toBe(true);
    expect(rules.of('document', 'editor')).toEqual({ includes: [], requires: [], excludes: [reference('blocked')] });
    expect(rules.of('document', 'viewer')).toEqual({
      includes: [
        { kind: 'same', relation: 'editor', text: 'editor' },
        { kind: 'arrow', via: 'parent', relation: 'viewer', text: 'parent->viewer' },
      ],
      requires: [{ kind: 'arrow', via: 'org', relation: 'member', text: 'org->member' }],
      excludes: [reference('blocked')],
    });
    expect([rules.of('document', 'owner'), rules.of('org', 'member'), rules.of('user', 'viewer')]).toEqual([undefined, undefined, undefined]);
    expect(rules.references).toBe(5);
    expect(
      [
        { kind: 'same', relation: 'owner' },
        { kind: 'same', relation: 'editor' },
        { kind: 'arrow', via: 'parent', relation: 'viewer' },
        { kind: 'arrow', via: 'org', relation: 'member' },
      ].map((ref) => rules.isPlainReference('document', ref as never)),
    ).toEqual([true, false, false, true]);
  });

  it('gives the plain walk every relation with its plain includes, and the namespaces without rules as they are', () => {
    const plain = new ModelRules([document, org, user]).plainDefinitions();
    expect(plain).toEqual([
      {
        name: 'document',
        relations: { parent: {}, owner: {}, blocked: {}, org: {}, editor: { includes: ['owner'] }, viewer: {} },
      },
      org,
      user,
    ]);
    expect(plain[1]).toBe(org);
    expect(plain[2]).toBe(user);
    // The tables are the plain model's, and the model's size counts the rules' references.
    const schema = new CompiledSchema([document, org, user]);
    expect(schema.arrows).toEqual([]);
    expect(schema.closure.filter((row) => row.rel === 'editor').map((row) => row.implied)).toEqual(['editor', 'owner']);
    expect(schema.rows).toBe(7 + 1 + 5);
    expect(CompiledSchema.rowsOf([document, org, user])).toBe(schema.rows);
  });

  it('makes ruled whatever includes a ruled relation, through any number of includes and through arrows to any namespace', () => {
    const rules = new ModelRules([
      // a includes b includes c, declared so that each pass over the model finds one more.
      {
        name: 'chain',
        relations: {
          a: { includes: ['b'] },
          b: { includes: ['c'] },
          c: { includes: ['d'] },
          d: { excludes: ['e'] },
          e: {},
          f: { includes: ['e'] },
          g: { includes: ['e', 'd'] },
        },
      },
      // d is plain here, though ruled in chain: a same-object reference to it is plain.
      { name: 'folder', relations: { parent: {}, a: { includes: ['parent->a'] }, e: { includes: ['parent->e'] }, d: {}, h: { includes: ['d'] } } },
    ]);
    const ruled = (ns: string, relations: string[]) => relations.map((relation) => rules.of(ns, relation) !== undefined);
    expect(ruled('chain', ['a', 'b', 'c', 'd', 'e', 'f', 'g'])).toEqual([true, true, true, true, false, false, true]);
    expect(ruled('folder', ['d', 'h'])).toEqual([false, false]);
    expect([
      rules.isPlainReference('folder', { kind: 'same', relation: 'd' }),
      rules.isPlainReference('folder', { kind: 'arrow', via: 'parent', relation: 'd' }),
    ]).toEqual([true, false]);
    // `a` is ruled in chain, so an arrow to `a` from folder may reach a ruled relation; `e` is plain everywhere.
    expect([rules.of('folder', 'a') !== undefined, rules.of('folder', 'e')]).toEqual([true, undefined]);
    expect(rules.of('chain', 'a')!.includes).toEqual([{ kind: 'same', relation: 'b', text: 'b' }]);
  });

  it('has no rules in a model without requires and excludes, whose definitions the plain walk takes as they are', () => {
    const namespaces = [{ name: 'folder', relations: { parent: {}, viewer: { includes: ['parent->viewer'] } } }, user];
    const rules = new ModelRules(namespaces);
    expect([rules.any, rules.references, rules.of('folder', 'viewer')]).toEqual([false, 0, undefined]);
    expect(rules.plainDefinitions()).toEqual(namespaces);
    expect(new CompiledSchema(namespaces).arrows).toEqual([{ ns: 'folder', rel: 'viewer', via: 'parent', target: 'viewer' }]);
  });
});
