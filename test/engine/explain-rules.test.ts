import { describe, expect, it } from 'vitest';
import { GrantIndex } from '../../src/engine/grant-index.ts';
import { IndexChecker } from '../../src/engine/index-checker.ts';
import { CompiledSchema } from '../../src/engine/schema.ts';
import { grant, RULED_DOCUMENT_RELATIONS } from './fixtures.ts';

/** Explain of a relation with rules, on docs/model.md#explain's examples: excluded, requirement-not-met, allowed with its requirements. */
describe('explaining a check with rules', () => {
  const schema = new CompiledSchema([
    { name: 'document', relations: RULED_DOCUMENT_RELATIONS },
    { name: 'org', relations: { member: {} } },
    { name: 'user', relations: null },
  ]);
  const index = new GrantIndex();
  for (const [subject, relation, object] of [
    ['user:alice', 'owner', 'document:plan'],
    ['user:alice', 'member', 'org:acme'],
    ['org:acme', 'org', 'document:plan'],
    ['user:bob', 'owner', 'document:plan'],
    ['user:bob', 'blocked', 'document:plan'],
    ['user:carol', 'owner', 'document:plan'],
  ] as const)
    index.add(grant(subject, relation, object));
  const explain = (subject: string, relation: string) =>
    new IndexChecker().explain({ index, agents: new Map() }, schema, grant(subject, relation, 'document:plan'), Date.now());
  const step = (subject: string, relation: string, object: string, via: string) => ({ subject, relation, object, via });

  it("names the exclusion and a shortest chain to it: bob's grant of blocked", async () => {
    expect(await explain('user:bob', 'editor')).toEqual({
      allowed: false,
      path: [step('user:bob', 'blocked', 'document:plan', 'direct')],
      reason: 'excluded',
      detail: 'blocked',
    });
  });

  it("gives the plain reasons when the base does not hold: bob's editor, which viewer includes, is excluded", async () => {
    expect(await explain('user:bob', 'viewer')).toEqual({ allowed: false, path: [], reason: 'no-path' });
  });

  it('names the first requirement not held, with no path', async () => {
    expect(await explain('user:carol', 'viewer')).toEqual({ allowed: false, path: [], reason: 'requirement-not-met', detail: 'org->member' });
  });

  it("gives the base's chain and one for each requirement: alice's grant of owner; member on org:acme, then the arrow's grant", async () => {
    expect(await explain('user:alice', 'viewer')).toEqual({
      allowed: true,
      path: [step('user:alice', 'owner', 'document:plan', 'includes:owner')],
      reason: null,
      requirements: [
        {
          reference: 'org->member',
          path: [step('user:alice', 'member', 'org:acme', 'direct'), step('org:acme', 'org', 'document:plan', 'arrow:org->member')],
        },
      ],
    });
    // No requirements on editor: none listed.
    expect(await explain('user:alice', 'editor')).toEqual({
      allowed: true,
      path: [step('user:alice', 'owner', 'document:plan', 'includes:owner')],
      reason: null,
    });
  });
});
