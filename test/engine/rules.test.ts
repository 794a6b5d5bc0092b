import { beforeEach, describe, expect, it } from 'vitest';
import { useServices } from '../helpers.ts';
import { tenantGraph } from './tenant-graph.ts';

/**
 * Requires, excludes and public grants through the engine, answered in memory and by PostgreSQL
 * (docs/model.md#requires-and-excludes, docs/model.md#public-grants): checks, bulks, both listings
 * and explain on the worked example of docs/model.md.
 */
const inMemory = useServices();
const databaseOnly = useServices({ graphMemory: 0 });

describe.each([
  ['in memory', inMemory],
  ['in PostgreSQL', databaseOnly],
])('the document model with rules, %s', (_, services) => {
  let g: Awaited<ReturnType<typeof tenantGraph>>;

  beforeEach(async () => {
    g = await tenantGraph(services);
    await g.namespace('org', { member: {} });
    await g.namespace('team', { member: {} });
    await g.namespace('document', {
      parent: {},
      owner: {},
      blocked: {},
      org: {},
      editor: { includes: ['owner'], excludes: ['blocked'] },
      viewer: { includes: ['editor', 'parent->viewer'], requires: ['org->member'], excludes: ['blocked'] },
    });
    await g.grant(
      ['org:acme', 'org', 'document:root'],
      ['org:acme', 'org', 'document:d1'],
      ['document:root', 'parent', 'document:d1'],
      ['user:ann', 'member', 'org:acme'],
      ['user:bob', 'member', 'org:acme'],
      ['user:cid', 'member', 'org:acme'],
      ['user:ann', 'owner', 'document:root'],
      ['user:bob', 'owner', 'document:d1'],
      ['user:cid', 'member', 'team:bad'],
      ['team:bad', 'blocked', 'document:d1'],
      ['user:cid', 'owner', 'document:root'],
      ['user:out', 'owner', 'document:d1'],
    );
  });

  it('checks each part for the subject as a whole', async () => {
    expect(await g.check('user:ann', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('user:bob', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('user:cid', 'viewer', 'document:root')).toBe(true);
    expect(await g.check('user:cid', 'viewer', 'document:d1')).toBe(false);
    expect(await g.check('user:out', 'editor', 'document:d1')).toBe(true);
    expect(await g.check('user:out', 'viewer', 'document:d1')).toBe(false);
    const bulk = await g.bulk([
      ['user:ann', 'viewer', 'document:d1'],
      ['user:cid', 'viewer', 'document:d1'],
      ['user:out', 'viewer', 'document:d1'],
      ['user:out', 'owner', 'document:d1'],
    ]);
    expect(bulk.map((r) => r.allowed)).toEqual([true, false, false, true]);
  });

  it('lists exactly the objects and subjects the check allows', async () => {
    expect(await g.listAll('user:cid', 'document', 'viewer')).toEqual(['root']);
    expect(await g.listAll('user:ann', 'document', 'viewer')).toEqual(['d1', 'root']);
    expect(await g.subjectsAll('document:d1', 'viewer', 'user')).toEqual(['ann', 'bob']);
  });

  it('explains an exclusion, a missing requirement and the requirements met', async () => {
    expect(await g.explain('user:cid', 'viewer', 'document:d1')).toMatchObject({
      allowed: false,
      reason: 'excluded',
      detail: 'blocked',
      path: [
        { subject: 'user:cid', relation: 'member', object: 'team:bad', via: 'member' },
        { subject: 'team:bad', relation: 'blocked', object: 'document:d1', via: 'direct' },
      ],
    });
    expect(await g.explain('user:out', 'viewer', 'document:d1')).toMatchObject({
      allowed: false,
      reason: 'requirement-not-met',
      detail: 'org->member',
      path: [],
    });
    const allowed = await g.explain('user:bob', 'viewer', 'document:d1');
    expect(allowed).toMatchObject({ allowed: true, reason: null, path: [{ subject: 'user:bob', relation: 'owner', object: 'document:d1' }] });
    expect(allowed.requirements).toEqual([
      {
        reference: 'org->member',
        path: [
          { subject: 'user:bob', relation: 'member', object: 'org:acme', via: 'direct' },
          { subject: 'org:acme', relation: 'org', object: 'document:d1', via: 'arrow:org->member' },
        ],
      },
    ]);
  });

  it('gives every user what user:* holds, lists * among the subjects, and explains it', async () => {
    await g.grant(['user:*', 'owner', 'document:pub'], ['org:acme', 'org', 'document:pub'], ['user:*', 'member', 'org:acme']);
    expect(await g.check('user:zed', 'editor', 'document:pub')).toBe(true);
    expect(await g.check('user:zed', 'viewer', 'document:pub')).toBe(true);
    expect(await g.check('user:*', 'viewer', 'document:pub')).toBe(true);
    expect(await g.check('team:bad', 'viewer', 'document:pub')).toBe(false);
    expect(await g.listAll('user:zed', 'document', 'editor')).toEqual(['pub']);
    expect(await g.subjectsAll('document:pub', 'editor', 'user')).toEqual(['*', 'ann', 'bob', 'cid', 'out']);
    expect(await g.explain('user:zed', 'editor', 'document:pub')).toMatchObject({
      allowed: true,
      path: [{ subject: 'user:*', relation: 'owner', object: 'document:pub', via: 'includes:owner' }],
    });
  });
});
