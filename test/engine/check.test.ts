import { beforeEach, describe, expect, it } from 'vitest';
import { useServices } from '../helpers.ts';
import type { Candidates, Checker, ListingWalks } from '../../src/engine/checker.ts';
import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { HOLDERS_READ } from '../../src/store/graph-sql.ts';
import { DOCUMENT_RELATIONS, FOLDER_RELATIONS } from './fixtures.ts';
import { tenantGraph } from './tenant-graph.ts';

const services = useServices();
let g: Awaited<ReturnType<typeof tenantGraph>>;

beforeEach(async () => {
  g = await tenantGraph(services);
  await g.namespace('document', DOCUMENT_RELATIONS);
  await g.namespace('folder', FOLDER_RELATIONS);
  await g.namespace('group', { member: {} });
});

describe('direct grants and includes', () => {
  it('allows a direct grant and nothing else', async () => {
    await g.grant(['user:alice', 'viewer', 'document:d1']);
    expect(await g.check('user:alice', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('user:alice', 'viewer', 'document:d2')).toBe(false);
    expect(await g.check('user:bob', 'viewer', 'document:d1')).toBe(false);
    expect(await g.check('user:alice', 'editor', 'document:d1')).toBe(false);
  });

  it('follows includes transitively on the same object, never backwards', async () => {
    await g.grant(['user:alice', 'owner', 'document:d1'], ['user:bob', 'editor', 'document:d1']);
    expect(await g.check('user:alice', 'editor', 'document:d1')).toBe(true);
    expect(await g.check('user:alice', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('user:bob', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('user:bob', 'owner', 'document:d1')).toBe(false);
  });

  it('answers revocations at once', async () => {
    await g.grant(['user:alice', 'owner', 'document:d1']);
    await g.revoke(['user:alice', 'owner', 'document:d1']);
    expect(await g.check('user:alice', 'viewer', 'document:d1')).toBe(false);
  });
});

describe('parent arrows', () => {
  it('makes folder viewers viewers of the folder documents, through nested folders', async () => {
    await g.grant(['folder:root', 'parent', 'folder:sub'], ['folder:sub', 'parent', 'document:d1'], ['user:alice', 'viewer', 'folder:root']);
    expect(await g.check('user:alice', 'viewer', 'folder:sub')).toBe(true);
    expect(await g.check('user:alice', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('user:alice', 'editor', 'document:d1')).toBe(false);
  });

  it('applies the far namespace includes at the end of an arrow', async () => {
    // document d2's parent is document d1: owners of d1 are viewers of d2 (viewer includes editor includes owner).
    await g.grant(['document:d1', 'parent', 'document:d2'], ['user:alice', 'owner', 'document:d1']);
    expect(await g.check('user:alice', 'viewer', 'document:d2')).toBe(true);
  });

  it('survives cycles in the data', async () => {
    await g.grant(['folder:a', 'parent', 'folder:b'], ['folder:b', 'parent', 'folder:a'], ['folder:b', 'parent', 'document:d1']);
    expect(await g.check('user:alice', 'viewer', 'document:d1')).toBe(false);
    await g.grant(['user:alice', 'viewer', 'folder:a']);
    expect(await g.check('user:alice', 'viewer', 'document:d1')).toBe(true);
    expect(await g.listAll('user:alice', 'folder', 'viewer')).toEqual(['a', 'b']);
  });

  it('follows at most 16 arrows in one chain', async () => {
    // f0 -> f1 -> ... -> f16: a viewer of f0 reaches f16 in 16 arrows, but not document d through f16 (17).
    const chain: [string, string, string][] = [];
    for (let i = 0; i < 16; i++) chain.push([`folder:f${i}`, 'parent', `folder:f${i + 1}`]);
    await g.grant(...chain, ['folder:f16', 'parent', 'document:d'], ['folder:f15', 'parent', 'document:e'], ['user:alice', 'viewer', 'folder:f0']);
    expect(await g.check('user:alice', 'viewer', 'folder:f16')).toBe(true);
    expect(await g.check('user:alice', 'viewer', 'document:e')).toBe(true);
    expect(await g.check('user:alice', 'viewer', 'document:d')).toBe(false);
    expect(await g.listAll('user:alice', 'document', 'viewer')).toEqual(['e']);
  });
});

describe('groups', () => {
  it('gives members what the group holds, one level only', async () => {
    await g.grant(
      ['user:alice', 'member', 'group:eng'],
      ['group:eng', 'member', 'group:all'],
      ['group:eng', 'viewer', 'document:d1'],
      ['group:all', 'viewer', 'document:d2'],
    );
    expect(await g.check('user:alice', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('user:alice', 'viewer', 'document:d2')).toBe(false);
    expect(await g.check('group:eng', 'viewer', 'document:d2')).toBe(true);
  });

  it('combines membership with includes and arrows', async () => {
    await g.grant(['user:alice', 'member', 'group:eng'], ['group:eng', 'viewer', 'folder:f'], ['folder:f', 'parent', 'document:d']);
    expect(await g.check('user:alice', 'viewer', 'document:d')).toBe(true);
    expect(await g.listAll('user:alice', 'document', 'viewer')).toEqual(['d']);
  });
});

describe('crowded objects', () => {
  it(`answers exactly for an object with more than ${HOLDERS_READ} holders of a relation`, async () => {
    const members = Array.from({ length: HOLDERS_READ * 2 }, (_, n): [string, string, string] => [`user:m${n}`, 'member', 'group:org']);
    await g.grant(...members, ['group:org', 'viewer', 'document:d1'], ['user:last', 'viewer', 'folder:f'], ['folder:f', 'parent', 'document:d1']);
    const viewers = Array.from({ length: HOLDERS_READ * 2 }, (_, n): [string, string, string] => [`user:v${n}`, 'viewer', 'document:d1']);
    await g.grant(...viewers);
    // Holders are read in byte order: v99 and m99 come after the first HOLDERS_READ of their lists.
    const probes: [string, boolean][] = [
      ['user:v0', true],
      ['user:v99', true],
      ['user:m0', true],
      ['user:m99', true],
      ['user:last', true],
      ['user:nobody', false],
    ];
    for (const [subject, expected] of probes) {
      expect(await g.check(subject, 'viewer', 'document:d1'), subject).toBe(expected);
      expect(await g.check(subject, 'member', 'group:org'), subject).toBe(subject.startsWith('user:m'));
    }
    const bulk = await g.bulk(probes.map(([subject]) => [subject, 'viewer', 'document:d1']));
    expect(bulk.map((r) => r.allowed)).toEqual(probes.map(([, expected]) => expected));
  });
});

describe('agents', () => {
  it('never allows an unregistered agent', async () => {
    expect(await g.check('agent:ghost', 'viewer', 'document:d1')).toBe(false);
    expect(await g.listAll('agent:ghost', 'document', 'viewer')).toEqual([]);
  });

  it('caps a registered agent by its scope mask', async () => {
    await g.agent('bot', ['document:viewer', 'check:read']);
    await g.grant(['agent:bot', 'owner', 'document:d1']);
    expect(await g.check('agent:bot', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('agent:bot', 'owner', 'document:d1')).toBe(false);
    expect(await g.check('agent:bot', 'editor', 'document:d1')).toBe(false);
    expect(await g.listAll('agent:bot', 'document', 'viewer')).toEqual(['d1']);
    expect(await g.listAll('agent:bot', 'document', 'owner')).toEqual([]);
  });

  it('accepts wildcards on either side of a scope entry', async () => {
    await g.agent('any', ['*:*']);
    await g.agent('docs', ['document:*']);
    await g.agent('viewers', ['*:viewer']);
    await g.grant(['agent:any', 'owner', 'document:d1'], ['agent:docs', 'owner', 'document:d1'], ['agent:viewers', 'viewer', 'folder:f']);
    expect(await g.check('agent:any', 'owner', 'document:d1')).toBe(true);
    expect(await g.check('agent:docs', 'editor', 'document:d1')).toBe(true);
    expect(await g.check('agent:viewers', 'viewer', 'folder:f')).toBe(true);
    expect(await g.check('agent:viewers', 'parent', 'folder:f')).toBe(false);
  });

  it('follows the bound user as the user access changes, capped by scope, without the user groups', async () => {
    await g.agent('bot', ['document:viewer']);
    await g.grant(['agent:bot', 'member', 'user:alice'], ['user:alice', 'member', 'group:eng'], ['group:eng', 'viewer', 'document:d9']);
    expect(await g.check('agent:bot', 'viewer', 'document:d1')).toBe(false);
    await g.grant(['user:alice', 'owner', 'document:d1']);
    expect(await g.check('agent:bot', 'viewer', 'document:d1')).toBe(true);
    expect(await g.check('agent:bot', 'owner', 'document:d1')).toBe(false);
    expect(await g.check('agent:bot', 'viewer', 'document:d9')).toBe(false);
    await g.revoke(['user:alice', 'owner', 'document:d1']);
    expect(await g.check('agent:bot', 'viewer', 'document:d1')).toBe(false);
  });

  it('kills an agent with every grant naming it, as subject or object', async () => {
    await g.agent('bot', ['*:*']);
    await g.grant(['agent:bot', 'viewer', 'document:d1'], ['user:alice', 'owner', 'agent:bot'], ['agent:bot', 'member', 'user:alice']);
    expect(await g.kill('bot')).toBe(3);
    expect(await g.check('agent:bot', 'viewer', 'document:d1')).toBe(false);
    expect(await g.kill('bot')).toBeNull();
  });
});

describe('open namespaces', () => {
  it('accept any relation and inherit nothing', async () => {
    await g.namespace('repo');
    await g.grant(['user:alice', 'maintainer', 'repo:r1'], ['repo:r1', 'parent', 'repo:r2']);
    expect(await g.check('user:alice', 'maintainer', 'repo:r1')).toBe(true);
    expect(await g.check('user:alice', 'maintainer', 'repo:r2')).toBe(false);
    expect(await g.check('user:alice', 'anything_else', 'repo:r1')).toBe(false);
  });
});

describe('validation', () => {
  it('rejects unknown namespaces and undeclared relations', async () => {
    await expect(g.check('user:alice', 'viewer', 'nothing:x')).rejects.toMatchObject({ type: 'namespace-not-found' });
    await expect(g.check('user:alice', 'member', 'document:x')).rejects.toMatchObject({ type: 'unknown-relation' });
    await expect(g.grant(['user:alice', 'member', 'document:x'])).rejects.toMatchObject({ type: 'unknown-relation' });
  });

  it('answers bulk checks in order, with per-item errors', async () => {
    await g.grant(['user:alice', 'viewer', 'document:d1']);
    const results = await g.bulk([
      ['user:alice', 'viewer', 'document:d1'],
      ['user:alice', 'viewer', 'nothing:x'],
      ['user:bob', 'viewer', 'document:d1'],
      ['user:alice', 'member', 'document:d1'],
      ['agent:ghost', 'viewer', 'document:d1'],
    ]);
    expect(results).toEqual([
      { allowed: true },
      { allowed: false, error: { type: 'namespace-not-found', detail: expect.any(String) } },
      { allowed: false },
      { allowed: false, error: { type: 'unknown-relation', detail: expect.any(String) } },
      { allowed: false },
    ]);
  });
});

describe('listing objects', () => {
  it('lists exactly the ids check allows, ascending in byte order, page by page', async () => {
    const ids = ['b', 'a', 'B', 'a.1', 'Z~', '0', 'z'];
    await g.grant(...ids.map((id): [string, string, string] => ['user:alice', 'owner', `document:${id}`]), ['user:bob', 'owner', 'document:x']);
    const expected = [...ids].sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1));
    expect(await g.listAll('user:alice', 'document', 'viewer', 2)).toEqual(expected);
    expect(await g.listAll('user:alice', 'document', 'viewer', 1000)).toEqual(expected);
    expect(await g.listAll('user:alice', 'document', 'viewer', 2, { via: 'scan' })).toEqual(expected);
    expect(await g.listAll('user:alice', 'document', 'viewer', 3, { via: 'scan' })).toEqual(expected);
    expect(await g.listAll('user:alice', 'document', 'viewer', 2, { via: 'sample' })).toEqual(expected);
  });

  describe('a subject that reaches more than the first walk may hold', () => {
    /** The checker under an engine that never walks first, counting what each listing asks of it. */
    const countingEngine = (options: { maxListingBudget?: number } = {}) => {
      const calls = { walks: 0, candidateBatches: 0 };
      const checker = services.engine.checker;
      const counting: Checker = {
        ...checker,
        invalidate: (tenantId) => checker.invalidate(tenantId),
        walks: Object.assign(Object.create(checker.walks) as ListingWalks, {
          reachable: (...args: Parameters<ListingWalks['reachable']>) => (calls.walks++, checker.walks.reachable(...args)),
        }),
        candidates: Object.assign(Object.create(checker.candidates) as Candidates, {
          objectIds: (...args: Parameters<Candidates['objectIds']>) => (calls.candidateBatches++, checker.candidates.objectIds(...args)),
        }),
      };
      return { engine: new AuthorizationEngine(counting, { listingBudget: 0, ...options }), calls };
    };
    const docs = Array.from({ length: 300 }, (_, n) => `d${String(n).padStart(3, '0')}`);
    const sparse = ['d007', 'd150', 'd299'];
    const list = (engine: AuthorizationEngine, subject: string, after: string | null = null) =>
      engine.listObjects(g.tenantId, { subject, namespace: 'document', relation: 'viewer', after, limit: 10 });

    beforeEach(async () => {
      await g.grant(...docs.map((d): [string, string, string] => ['user:all', 'owner', `document:${d}`]));
      await g.grant(...sparse.map((d): [string, string, string] => ['user:few', 'viewer', `document:${d}`]));
    });

    it('walks after one batch of candidates when they show it reaches sparsely', async () => {
      const { engine, calls } = countingEngine();
      expect(await list(engine, 'user:few')).toEqual({ ids: sparse, more: false });
      expect(calls).toEqual({ walks: 2, candidateBatches: 1 });
    });

    it('keeps checking candidates when they show it reaches densely', async () => {
      const { engine, calls } = countingEngine();
      expect(await list(engine, 'user:all', 'd100')).toEqual({ ids: docs.slice(101, 111), more: true });
      expect(calls).toEqual({ walks: 1, candidateBatches: 1 });
    });

    it('goes back to checking candidates when the walk outgrows its budget', async () => {
      const { engine, calls } = countingEngine({ maxListingBudget: 2 });
      expect(await list(engine, 'user:few')).toEqual({ ids: sparse, more: false });
      expect(calls.walks).toBe(2);
      expect(calls.candidateBatches).toBeGreaterThan(1);
    });
  });
});

describe('a listing whose candidates are past the work budget of a check', () => {
  it('fails with check-too-complex rather than leaving them out', async () => {
    const fan = Object.fromEntries([['parent', {}], ...[1, 2].map((r) => [`r${r}`, { includes: [1, 2].map((t) => `parent->r${t}`) }])]);
    await g.namespace('node', fan);
    const grants: [string, string, string][] = [];
    for (let a = 0; a < 120; a++) for (let b = 0; b < 120; b++) if (a !== b) grants.push([`node:n${a}`, 'parent', `node:n${b}`]);
    for (let i = 0; i < grants.length; i += 1000) await g.grant(...grants.slice(i, i + 1000));
    await g.grant(['user:ann', 'r1', 'user:elsewhere']);
    expect(await services.heldTenants.load(g.tenantId)).toBe(true);
    await expect(g.listAll('user:ann', 'node', 'r1', 100, { via: 'scan' })).rejects.toMatchObject({ type: 'check-too-complex' });
  });
});
