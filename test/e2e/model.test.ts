import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AppDeps } from '../../src/http/context.ts';
import { packageRoot } from '../../src/package-root.ts';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { createServices } from '../../src/runtime.ts';
import { createKey } from '../../src/store/keys.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { databaseUrl, uniqueName } from '../helpers.ts';
import { runGrantd, startServer, type RunningServer } from './serve.ts';

/** grantd schema apply, schema export and test: the built CLI, against the built server over a real socket. */
// Each run of the CLI starts a process: seconds each on a loaded machine, and some tests make four.
describe('grantd schema and grantd test', { timeout: 120_000 }, () => {
  let server: RunningServer;
  let services: AppDeps;
  let dir: string;
  let admin: string;
  let reader: string;

  const EXAMPLE = join(packageRoot(), 'examples', 'readme-model.yaml');
  const env = (key: string) => ({ GRANTD_URL: server.baseUrl, GRANTD_KEY: key });
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const api = async (method: string, path: string, body?: object) => {
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: res.status === 204 ? null : ((await res.json()) as Record<string, unknown>) };
  };
  /** The example's namespaces made through the API, as a tenant has them after `grantd schema apply` of it. */
  const createExampleNamespaces = async () => {
    const { namespaces } = parse(readFileSync(EXAMPLE, 'utf8')) as { namespaces: Record<string, object> };
    for (const [name, definition] of Object.entries(namespaces))
      expect((await api('POST', '/v1/namespaces', { name, ...definition })).status).toBe(201);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'grantd-model-'));
    services = createServices(databaseUrl(), { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 1 }, pino({ level: 'silent' }));
    server = await startServer({ DATABASE_URL: databaseUrl() });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await services?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('schema apply and export', () => {
    // A tenant per test, so that each test runs alone and in any order.
    beforeEach(async () => {
      const tenant = await createTenant(services.db, uniqueName('model'));
      admin = tenant.key.secret;
      reader = (await createKey(services.db, tenant.tenant.id, 'read only', ['grant:read'])).secret;
    });

    it('creates the namespaces of a file, and changes nothing the second time', async () => {
      const first = await runGrantd(['schema', 'apply', EXAMPLE], env(admin));
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toBe(`created namespace folder\ncreated namespace document\n2 changed, 0 already as in ${EXAMPLE}\n`);
      expect((await api('GET', '/v1/namespaces/document')).body).toMatchObject({ relations: { editor: { includes: ['owner'] } } });

      const second = await runGrantd(['schema', 'apply', EXAMPLE], env(admin));
      expect(second.code).toBe(0);
      expect(second.stdout).toBe(`no changes: the namespaces are as in ${EXAMPLE}\n`);
    });

    it('exports what apply made, in a format apply takes back unchanged', async () => {
      await createExampleNamespaces();
      const exported = await runGrantd(['schema', 'export'], env(reader));
      expect(exported.code).toBe(0);
      expect(exported.stdout).toBe(
        [
          'namespaces:',
          '  document:',
          '    relations:',
          '      editor:',
          '        includes:',
          '          - owner',
          '      owner: {}',
          '      parent: {}',
          '      viewer:',
          '        includes:',
          '          - editor',
          '          - parent->viewer',
          '  folder:',
          '    relations:',
          '      viewer: {}',
          '',
        ].join('\n'),
      );
      const again = await runGrantd(['schema', 'apply', file('exported.yaml', exported.stdout)], env(admin));
      expect(again.stdout).toMatch(/^no changes/);
      const json = await runGrantd(['schema', 'export', '--json'], env(reader));
      expect(JSON.parse(json.stdout)).toEqual({ namespaces: { document: expect.any(Object), folder: { relations: { viewer: {} } } } });
    });

    it('updates, and deletes only with --prune; refuses as the API does and says what it did', async () => {
      await createExampleNamespaces();
      await api('POST', '/v1/namespaces', { name: 'scratch' });
      const changed = file('changed.yaml', 'namespaces:\n  folder: {relations: {viewer: {}, owner: {}}}\n  document: {}\n');
      const kept = await runGrantd(['schema', 'apply', changed], env(admin));
      expect(kept.code).toBe(0);
      expect(kept.stdout).toBe(`updated namespace folder\nupdated namespace document\n2 changed, 0 already as in ${changed}\n`);
      expect((await api('GET', '/v1/namespaces/scratch')).status).toBe(200);

      const pruned = await runGrantd(['schema', 'apply', changed, '--prune'], env(admin));
      expect(pruned.stdout).toBe(`deleted namespace scratch\n1 changed, 2 already as in ${changed}\n`);
      expect((await api('GET', '/v1/namespaces/scratch')).status).toBe(404);

      // A grant uses folder's owner: dropping it is refused by the server, and nothing after it is tried.
      expect((await api('POST', '/v1/grants', { subject: 'user:a', relation: 'owner', object: 'folder:f1' })).status).toBe(201);
      const refused = await runGrantd(
        ['schema', 'apply', file('drop.yaml', 'namespaces:\n  folder: {relations: {viewer: {}}}\n  fresh: {}\n')],
        env(admin),
      );
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain('the server refused to update namespace folder: Namespace in use (namespace-in-use): ');
      expect(refused.stderr).toContain('owner (1 grant)');
      expect(refused.stderr).toMatch(/\nNothing was changed\.\n$/);
      expect((await api('GET', '/v1/namespaces/fresh')).status).toBe(404);

      // Without grant:write, the first change is refused.
      const readOnly = await runGrantd(['schema', 'apply', EXAMPLE], env(reader));
      expect(readOnly.code).toBe(1);
      expect(readOnly.stderr).toContain('insufficient-scope');
    });

    it('undoes what it changed when the server refuses a later change, so that nothing is half-applied', async () => {
      await api('POST', '/v1/namespaces', { name: 'folder', relations: { viewer: {} } });
      await api('POST', '/v1/namespaces', { name: 'document' });
      await api('POST', '/v1/namespaces', { name: 'ledger', relations: { auditor: {}, owner: {} } });
      expect((await api('POST', '/v1/grants', { subject: 'user:a', relation: 'auditor', object: 'ledger:l1' })).status).toBe(201);
      const namespaces = async () => (await api('GET', '/v1/namespaces')).body!.namespaces as { name: string; relations: unknown }[];
      const definitions = async () => (await namespaces()).map(({ name, relations }) => ({ name, relations }));
      const before = await definitions();
      expect(before.map((ns) => ns.name)).toEqual(expect.arrayContaining(['document', 'folder', 'ledger']));

      // folder is updated, then ledger's update is refused (its auditor relation holds a grant); newbie is never created.
      const drop = file(
        'half.yaml',
        [
          'namespaces:',
          '  folder: {relations: {viewer: {}, owner: {}, editor: {}}}',
          '  ledger: {relations: {owner: {}}}',
          '  newbie: {}',
          '  document: {}',
          '',
        ].join('\n'),
      );
      const run = await runGrantd(['schema', 'apply', drop], env(admin));
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('updated namespace folder\nrestored namespace folder\n');
      expect(run.stderr).toBe(
        `grantd schema apply: the server refused to update namespace ledger: Namespace in use (namespace-in-use): ${run.stderr.split('(namespace-in-use): ')[1]!.split('\n')[0]}\n` +
          'The 1 change made before it was undone: the namespaces are as they were before.\n',
      );
      expect(run.stderr).toContain('auditor (1 grant)');
      expect(await definitions()).toEqual(before);

      // With --prune: folder updated, archive deleted, then ledger (in use) cannot be deleted: both undone.
      await api('POST', '/v1/namespaces', { name: 'archive', relations: { reader: {} } });
      const withArchive = await definitions();
      const prune = file('prune.yaml', 'namespaces:\n  folder: {relations: {viewer: {}, owner: {}, editor: {}}}\n  document: {}\n  brand_new: {}\n');
      const pruned = await runGrantd(['schema', 'apply', prune, '--prune'], env(admin));
      expect(pruned.code).toBe(1);
      expect(pruned.stderr).toContain('the server refused to delete namespace ledger: Namespace in use (namespace-in-use): ');
      expect(pruned.stderr).toContain('The 2 changes made before it were undone');
      expect(pruned.stdout).toBe('updated namespace folder\ndeleted namespace archive\ncreated again namespace archive\nrestored namespace folder\n');
      expect(await definitions()).toEqual(withArchive);
      expect((await api('GET', '/v1/namespaces/brand_new')).status).toBe(404);
      await api('DELETE', '/v1/namespaces/archive');
    });

    it('validates the whole file before changing anything', async () => {
      const before = (await api('GET', '/v1/namespaces')).body;
      const bad = file('inconsistent.yaml', 'namespaces:\n  aaa: {}\n  zzz:\n    relations:\n      viewer: {includes: [parent->viewer]}\n');
      const run = await runGrantd(['schema', 'apply', bad], env(admin));
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        `grantd schema apply: nothing was changed:\n${bad}:5:27: namespaces.zzz.relations.viewer.includes.0: relation viewer includes "parent->viewer", but parent is not declared\n`,
      );
      expect((await api('GET', '/v1/namespaces')).body).toEqual(before);
      const noKey = await runGrantd(['schema', 'apply', EXAMPLE], { GRANTD_URL: server.baseUrl });
      expect(noKey.code).toBe(2);
      expect(noKey.stderr).toContain('set GRANTD_KEY');
    });
  });

  describe('grantd test', () => {
    it('passes the example file, with no server and no key', async () => {
      const run = await runGrantd(['test', EXAMPLE], {});
      expect(run.stderr).toBe('');
      expect(run.stdout).toBe('10 assertions: 10 passed, 0 failed\n');
      expect(run.code).toBe(0);
    });

    it('prints a line per failing assertion with expected and actual, a summary, and exits 1', async () => {
      const text = readFileSync(EXAMPLE, 'utf8')
        .replace('relation: viewer, object: document:q3 }\n    allowed: false', 'relation: viewer, object: document:q3 }\n    allowed: true')
        .replace('expect: [q4]', 'expect: [q4, q5]')
        .replace("expect: ['user:alice', 'user:dave']", "expect: ['user:alice']");
      const path = file('wrong.yaml', text);
      const run = await runGrantd(['test', path], {});
      expect(run.code).toBe(1);
      const line = (needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;
      expect(run.stdout).toBe(
        [
          `FAIL ${path}:${line('user:bob, relation: viewer')}:5: check user:bob viewer document:q3: expected allowed true, got false`,
          `FAIL ${path}:${line('subject: user:dave, relation: viewer }')}:5: objects document viewer of user:dave: expected [q4, q5], got [q4]`,
          `FAIL ${path}:${line('object: document:q4, relation: viewer, subject_namespace: user')}:5: subjects user viewer on document:q4: expected [user:alice], got [user:alice, user:dave]`,
          '10 assertions: 7 passed, 3 failed',
          '',
        ].join('\n'),
      );
    });

    it('refuses malformed YAML with its line and column, and exits 2', async () => {
      const path = file('malformed.yaml', 'namespaces:\n  document:\n    relations: {owner: {}\n  folder: {}\n');
      const run = await runGrantd(['test', path], {});
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(new RegExp(`^grantd test: ${path} cannot be tested:\\n${path}:4:3: .+\\n$`));
    });

    it('refuses an unknown relation in an assertion and a grant the API would refuse, naming where', async () => {
      const path = file(
        'unknown.yaml',
        [
          'namespaces:',
          '  document: {relations: {owner: {}}}',
          'grants:',
          '  - {subject: agent:ghost, relation: owner, object: document:1}',
          'assertions:',
          '  - check: {subject: user:a, relation: approver, object: document:1}',
          '    allowed: false',
          '',
        ].join('\n'),
      );
      const run = await runGrantd(['test', path], {});
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(`grantd test: ${path} cannot be tested:\n${path}:4:5: grants.0: agent ghost is not in agents\n`);
      const fixed = await runGrantd(['test', file('unknown2.yaml', readFileSync(path, 'utf8').replace('agent:ghost', 'user:b'))], {});
      expect(fixed.code).toBe(2);
      expect(fixed.stderr).toContain(':6:5: assertions.0: namespace document declares no relation approver');
    });
  });
});
