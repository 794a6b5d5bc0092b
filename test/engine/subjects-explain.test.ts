import { beforeEach, describe, expect, it } from 'vitest';
import type { AppDeps } from '../../src/http/context.ts';
import { parseRef } from '../../src/engine/refs.ts';
import { applyBatch } from '../../src/store/grants.ts';
import { useServices } from '../helpers.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS } from './fixtures.ts';
import { tenantGraph } from './tenant-graph.ts';

/**
 * Who holds a relation on an object, and why a check is answered as it is, from the grants held in
 * memory and from PostgreSQL alike (the property tests compare both with the reference evaluator).
 */
const inMemory = useServices();
const inDatabase = useServices({ graphMemory: 0 });
const HOUR = 3_600_000;
/** A grant with a window, as the store writes it (an expired one too, which the API refuses). */
const windowed = (subject: string, relation: string, object: string, window: { notBefore: number | null; expiresAt: number | null }) => ({
  subject: parseRef(subject, 'subject'),
  relation,
  object: parseRef(object, 'object'),
  window,
});

// Each with whether it holds the tenant in memory.
describe.each([
  ['in memory', inMemory, true],
  ['in PostgreSQL', inDatabase, false],
] as [string, AppDeps, boolean][])('%s', (_, services, held) => {
  let g: Awaited<ReturnType<typeof tenantGraph>>;

  beforeEach(async () => {
    g = await tenantGraph(services);
    await g.namespace('document', DOCUMENT_RELATIONS);
    await g.namespace('folder', FOLDER_RELATIONS);
    await g.namespace('group', { member: {}, viewer: {} });
    expect(await services.heldTenants.load(g.tenantId)).toBe(held);
  });

  describe('subjects', () => {
    it('lists direct holders, holders through includes and arrows, and the direct members of groups that hold it, in byte order', async () => {
      await g.grant(
        ['user:zed', 'owner', 'document:d1'],
        ['user:Bea', 'viewer', 'document:d1'],
        ['group:eng', 'viewer', 'folder:f1'],
        ['folder:f1', 'parent', 'document:d1'],
        ['user:amy', 'member', 'group:eng'],
        ['group:ops', 'member', 'group:eng'], // a group of a group: its members are not expanded
        ['user:cy', 'member', 'group:ops'],
        ['user:dan', 'viewer', 'document:d2'],
      );
      expect(await g.subjectsAll('document:d1', 'viewer', 'user')).toEqual(['Bea', 'amy', 'zed']);
      expect(await g.subjectsAll('document:d1', 'viewer', 'user', 1)).toEqual(['Bea', 'amy', 'zed']);
      expect(await g.subjectsAll('document:d1', 'viewer', 'user', 1, { via: 'scan' })).toEqual(['Bea', 'amy', 'zed']);
      expect(await g.subjectsAll('document:d1', 'viewer', 'group')).toEqual(['eng', 'ops']);
      expect(await g.subjectsAll('document:d1', 'owner', 'user')).toEqual(['zed']);
      expect(await g.subjectsAll('document:d3', 'viewer', 'user')).toEqual([]);
    });

    it('lists only registered agents whose scope covers the relation', async () => {
      await g.agent('reader', ['document:viewer']);
      await g.agent('writer', ['folder:*']);
      await g.grant(['agent:reader', 'member', 'user:alice'], ['agent:writer', 'viewer', 'document:d1'], ['user:alice', 'viewer', 'document:d1']);
      expect(await g.subjectsAll('document:d1', 'viewer', 'agent')).toEqual(['reader']);
      expect(await g.subjectsAll('document:d1', 'viewer', 'agent', 1, { via: 'scan' })).toEqual(['reader']);
      await g.kill('reader');
      expect(await g.subjectsAll('document:d1', 'viewer', 'agent')).toEqual([]);
    });

    it('pages through subjects past the walk budget by checking the namespace subjects in order', async () => {
      const users = Array.from({ length: 40 }, (_, i) => `u${String(i).padStart(2, '0')}`);
      await g.grant(
        ...users.map((u, i): [string, string, string] => [`user:${u}`, i % 3 === 0 ? 'member' : 'viewer', i % 3 === 0 ? 'group:eng' : 'document:d1']),
      );
      await g.grant(['group:eng', 'viewer', 'document:d1'], ['user:outsider', 'viewer', 'document:d2']);
      for (const via of ['walk', 'scan', 'sample'] as const) expect(await g.subjectsAll('document:d1', 'viewer', 'user', 7, { via })).toEqual(users);
    });
  });

  describe('explain', () => {
    it('gives the shortest path, from the subject to the object, each grant with how it counts', async () => {
      await g.grant(
        ['folder:root', 'parent', 'folder:sub'],
        ['folder:sub', 'parent', 'document:d1'],
        ['group:eng', 'viewer', 'folder:root'],
        ['user:alice', 'member', 'group:eng'],
      );
      expect(await g.explain('user:alice', 'viewer', 'document:d1')).toEqual({
        allowed: true,
        reason: null,
        path: [
          { subject: 'user:alice', relation: 'member', object: 'group:eng', via: 'member' },
          { subject: 'group:eng', relation: 'viewer', object: 'folder:root', via: 'direct' },
          { subject: 'folder:root', relation: 'parent', object: 'folder:sub', via: 'arrow:parent->viewer' },
          { subject: 'folder:sub', relation: 'parent', object: 'document:d1', via: 'arrow:parent->viewer' },
        ],
      });
      // A shorter way in: owning the document itself.
      await g.grant(['user:alice', 'owner', 'document:d1']);
      expect(await g.explain('user:alice', 'viewer', 'document:d1')).toEqual({
        allowed: true,
        reason: null,
        path: [{ subject: 'user:alice', relation: 'owner', object: 'document:d1', via: 'includes:owner' }],
      });
    });

    it('says why a check is denied', async () => {
      await g.agent('bot', ['folder:viewer']);
      await g.grant(['agent:bot', 'member', 'user:alice'], ['user:alice', 'viewer', 'document:d1']);
      expect(await g.explain('user:bob', 'viewer', 'document:d1')).toEqual({ allowed: false, path: [], reason: 'no-path' });
      expect(await g.explain('user:alice', 'owner', 'document:d1')).toEqual({ allowed: false, path: [], reason: 'no-path' });
      expect(await g.explain('agent:ghost', 'viewer', 'document:d1')).toEqual({ allowed: false, path: [], reason: 'agent-not-registered' });
      expect(await g.explain('agent:bot', 'viewer', 'document:d1')).toEqual({ allowed: false, path: [], reason: 'agent-scope' });
      expect(await g.explain('agent:bot', 'viewer', 'folder:f1')).toEqual({ allowed: false, path: [], reason: 'no-path' });
    });

    it('names the grants outside their window that alone would confer it, directly, through a group or an arrow', async () => {
      const now = Date.now();
      const [ahead, lapsed] = [
        { notBefore: now + HOUR, expiresAt: null },
        { notBefore: null, expiresAt: now - HOUR },
      ];
      await applyBatch(
        services.db,
        g.tenantId,
        [
          windowed('user:ann', 'viewer', 'document:d1', ahead),
          windowed('user:bob', 'member', 'group:eng', lapsed),
          windowed('folder:f2', 'parent', 'document:d2', lapsed),
          windowed('user:dee', 'viewer', 'document:d3', { notBefore: now - HOUR, expiresAt: now + HOUR }),
        ],
        [],
      );
      await g.grant(['group:eng', 'viewer', 'document:d1'], ['user:cy', 'viewer', 'folder:f2']);
      expect(await g.explain('user:ann', 'viewer', 'document:d1')).toEqual({ allowed: false, path: [], reason: 'not-yet-valid' });
      expect(await g.explain('user:bob', 'viewer', 'document:d1')).toEqual({ allowed: false, path: [], reason: 'expired' });
      expect(await g.explain('user:cy', 'viewer', 'document:d2')).toEqual({ allowed: false, path: [], reason: 'expired' });
      expect(await g.explain('user:ann', 'viewer', 'document:d2')).toEqual({ allowed: false, path: [], reason: 'no-path' });
      expect(await g.explain('user:dee', 'viewer', 'document:d3')).toEqual({
        allowed: true,
        reason: null,
        path: [{ subject: 'user:dee', relation: 'viewer', object: 'document:d3', via: 'direct' }],
      });
      expect(services.heldTenants.holds(g.tenantId)).toBe(held);
    });
  });
});
