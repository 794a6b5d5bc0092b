import type { RelationDefinitions } from '../../src/engine/schema.ts';
import type { Triple } from './reference.ts';

/**
 * Cases worked by hand from docs/model.md#what-a-check-means: exclusion, intersection and public
 * grants (`<namespace>:*`), the limit of 16 arrows, and the model as it was without them; answered
 * by the reference evaluator (reference.test.ts) and by both engines (rule-cases.test.ts).
 */
export interface RuleCase {
  name: string;
  definitions: Record<string, RelationDefinitions | null>;
  grants: Triple[];
  scopes?: Record<string, string[]>;
  /** Each check with its answer: 'too-complex' when a requires or excludes reference is not decided within 16 arrows. */
  checks: [Triple, boolean | 'too-complex'][];
}

const chain = (from: number, to: number): Triple[] =>
  Array.from({ length: to - from }, (_, k): Triple => [`folder:f${from + k}`, 'parent', `folder:f${from + k + 1}`]);

export const RULE_CASES: RuleCase[] = [
  {
    name: 'a user in a group granted viewer but who holds blocked through a group is not a viewer',
    definitions: { doc: { member: {}, blocked: {}, viewer: { excludes: ['blocked'] } } },
    grants: [
      ['user:alice', 'member', 'team:eng'],
      ['user:bob', 'member', 'team:eng'],
      ['team:eng', 'viewer', 'doc:d'],
      ['user:alice', 'member', 'team:suspended'],
      ['team:suspended', 'blocked', 'doc:d'],
      ['user:carol', 'viewer', 'doc:d'],
      ['user:carol', 'blocked', 'doc:d'],
    ],
    checks: [
      [['user:alice', 'viewer', 'doc:d'], false],
      [['user:bob', 'viewer', 'doc:d'], true],
      [['team:eng', 'viewer', 'doc:d'], true],
      [['user:carol', 'viewer', 'doc:d'], false],
      [['user:alice', 'blocked', 'doc:d'], true],
    ],
  },
  {
    name: "requires org->member: a viewer must also be a member of the object's org",
    definitions: { doc: { org: {}, viewer: { requires: ['org->member'] } } },
    grants: [
      ['org:acme', 'org', 'doc:d'],
      ['user:alice', 'viewer', 'doc:d'],
      ['user:alice', 'member', 'org:acme'],
      ['user:bob', 'viewer', 'doc:d'],
      ['user:carol', 'member', 'org:acme'],
    ],
    checks: [
      [['user:alice', 'viewer', 'doc:d'], true],
      [['user:bob', 'viewer', 'doc:d'], false],
      [['user:carol', 'viewer', 'doc:d'], false],
    ],
  },
  {
    name: 'the definition of the API (editor excludes blocked; viewer includes editor and parent->viewer, requires org->member, excludes blocked)',
    definitions: {
      document: {
        parent: {},
        owner: {},
        blocked: {},
        org: {},
        editor: { includes: ['owner'], excludes: ['blocked'] },
        viewer: { includes: ['editor', 'parent->viewer'], requires: ['org->member'], excludes: ['blocked'] },
      },
    },
    grants: [
      ['org:acme', 'org', 'document:top'],
      ['org:acme', 'org', 'document:q4'],
      ['document:top', 'parent', 'document:q4'],
      ['user:alice', 'owner', 'document:top'],
      ['user:alice', 'member', 'org:acme'],
      ['user:bob', 'owner', 'document:top'],
      ['user:bob', 'member', 'org:acme'],
      ['user:bob', 'blocked', 'document:q4'],
      ['user:erin', 'owner', 'document:q4'],
    ],
    checks: [
      [['user:alice', 'viewer', 'document:q4'], true],
      [['user:bob', 'viewer', 'document:top'], true],
      [['user:bob', 'viewer', 'document:q4'], false],
      [['user:erin', 'editor', 'document:q4'], true],
      [['user:erin', 'viewer', 'document:q4'], false], // not a member of acme
    ],
  },
  {
    name: 'user:* viewer on a public page: every user, and user:* itself, views it; no other namespace does',
    definitions: { page: { viewer: {} } },
    grants: [['user:*', 'viewer', 'page:home']],
    checks: [
      [['user:anyone', 'viewer', 'page:home'], true],
      [['user:*', 'viewer', 'page:home'], true],
      [['team:eng', 'viewer', 'page:home'], false],
      [['user:anyone', 'viewer', 'page:other'], false],
    ],
  },
  {
    name: 'a team member does not get grants made to team:*',
    definitions: { doc: { viewer: {} } },
    grants: [
      ['user:alice', 'member', 'team:eng'],
      ['team:*', 'viewer', 'doc:d'],
    ],
    checks: [
      [['team:eng', 'viewer', 'doc:d'], true],
      [['team:other', 'viewer', 'doc:d'], true],
      [['team:*', 'viewer', 'doc:d'], true],
      [['user:alice', 'viewer', 'doc:d'], false],
    ],
  },
  {
    name: '(user:*, member, team:eng) makes every user a member, one level only',
    definitions: { doc: { viewer: {} } },
    grants: [
      ['user:*', 'member', 'team:eng'],
      ['team:eng', 'viewer', 'doc:d'],
      ['team:eng', 'member', 'team:all'],
      ['team:all', 'viewer', 'doc:e'],
    ],
    checks: [
      [['user:anyone', 'member', 'team:eng'], true],
      [['user:anyone', 'viewer', 'doc:d'], true],
      [['user:*', 'viewer', 'doc:d'], true],
      [['user:anyone', 'viewer', 'doc:e'], false],
      [['user:anyone', 'member', 'team:all'], true], // team:eng, its group, holds member there
    ],
  },
  {
    name: "agent:* grants still pass the agent's scope; agent:* itself is no registered agent",
    definitions: { doc: { viewer: {} } },
    grants: [['agent:*', 'viewer', 'doc:d']],
    scopes: { reader: ['doc:viewer'], other: ['folder:*'] },
    checks: [
      [['agent:reader', 'viewer', 'doc:d'], true],
      [['agent:other', 'viewer', 'doc:d'], false],
      [['agent:ghost', 'viewer', 'doc:d'], false],
      [['agent:*', 'viewer', 'doc:d'], false],
      [['user:alice', 'viewer', 'doc:d'], false],
    ],
  },
  {
    name: 'the scope is applied once, at the top: not to the references of requires',
    definitions: { doc: { owner: {}, viewer: { requires: ['owner'] } } },
    grants: [
      ['agent:reader', 'viewer', 'doc:d'],
      ['agent:reader', 'owner', 'doc:d'],
    ],
    scopes: { reader: ['doc:viewer'] },
    checks: [
      [['agent:reader', 'viewer', 'doc:d'], true],
      [['agent:reader', 'owner', 'doc:d'], false],
    ],
  },
  {
    name: 'a check with subject user:* asks what every user holds',
    definitions: { doc: { blocked: {}, viewer: { excludes: ['blocked'] } } },
    grants: [
      ['user:alice', 'viewer', 'doc:d'],
      ['user:*', 'viewer', 'doc:p'],
      ['user:mallory', 'blocked', 'doc:p'],
      ['user:*', 'member', 'team:all'],
      ['team:all', 'viewer', 'doc:t'],
      ['user:*', 'viewer', 'doc:q'],
      ['user:*', 'blocked', 'doc:q'],
    ],
    checks: [
      [['user:*', 'viewer', 'doc:d'], false],
      [['user:*', 'viewer', 'doc:p'], true],
      [['user:alice', 'viewer', 'doc:p'], true],
      [['user:mallory', 'viewer', 'doc:p'], false],
      [['user:*', 'viewer', 'doc:t'], true],
      [['user:*', 'viewer', 'doc:q'], false],
      [['user:alice', 'viewer', 'doc:q'], false],
    ],
  },
  {
    name: 'arrows under requires count from the checked object: 16 are followed, and what only a 17th decides is refused',
    definitions: {
      folder: { parent: {}, viewer: { includes: ['parent->viewer'] } },
      doc: { parent: {}, reader: {}, viewer: { includes: ['reader'], requires: ['parent->viewer'] } },
    },
    grants: [
      ...chain(0, 16),
      ['folder:f16', 'parent', 'doc:d'],
      ['user:near', 'viewer', 'folder:f1'],
      ['user:far', 'viewer', 'folder:f0'],
      ['user:near', 'reader', 'doc:d'],
      ['user:far', 'reader', 'doc:d'],
    ],
    checks: [
      [['user:near', 'viewer', 'doc:d'], true], // 16 arrows: doc:d to f16, then f16 back to f1
      [['user:far', 'viewer', 'doc:d'], 'too-complex'], // 17 arrows
      [['user:nobody', 'viewer', 'doc:d'], false], // holds no reader: the requirement is not asked
      [['user:far', 'viewer', 'folder:f16'], true], // 16 arrows from folder:f16
    ],
  },
  {
    name: 'an exclusion through an arrow that 16 arrows do not decide refuses the check',
    definitions: {
      folder: { parent: {}, blocked: { includes: ['parent->blocked'] } },
      doc: { parent: {}, viewer: { excludes: ['parent->blocked'] } },
    },
    grants: [
      ...chain(0, 16),
      ['folder:f16', 'parent', 'doc:d'],
      ['user:near', 'blocked', 'folder:f1'],
      ['user:far', 'blocked', 'folder:f0'],
      ['user:*', 'viewer', 'doc:d'],
    ],
    checks: [
      [['user:near', 'viewer', 'doc:d'], false], // blocked on folder:f1, 16 arrows up
      [['user:far', 'viewer', 'doc:d'], 'too-complex'], // blocked on folder:f0, 17 arrows up
      [['user:other', 'viewer', 'doc:d'], 'too-complex'], // folder:f0 is 17 arrows up: it might block anyone
    ],
  },
  {
    name: 'without requires, excludes and *, the model as before: one level of groups, an agent through its user, open namespaces plain',
    definitions: { doc: { owner: {}, parent: {}, viewer: { includes: ['owner', 'parent->viewer'] } }, folder: { viewer: {} }, team: null },
    grants: [
      ['user:alice', 'member', 'team:eng'],
      ['team:eng', 'member', 'team:all'],
      ['team:all', 'owner', 'doc:d'],
      ['team:eng', 'viewer', 'folder:f'],
      ['folder:f', 'parent', 'doc:d'],
      ['agent:helper', 'member', 'user:alice'],
      ['user:alice', 'owner', 'doc:own'],
    ],
    scopes: { helper: ['doc:viewer'] },
    checks: [
      [['user:alice', 'viewer', 'doc:d'], true], // her group views the parent folder
      [['team:eng', 'owner', 'doc:d'], true],
      [['user:alice', 'owner', 'doc:d'], false], // team:all is two levels away
      [['agent:helper', 'viewer', 'doc:own'], true],
      [['agent:helper', 'owner', 'doc:own'], false], // out of its scope
      [['agent:helper', 'viewer', 'doc:d'], false], // alice reaches it through her group only
    ],
  },
];
