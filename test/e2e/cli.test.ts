import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { databaseUrl, uniqueName } from '../helpers.ts';
import { callGrantd, runGrantd, startServer, type RunningServer } from './serve.ts';

/** Every command of the built `grantd` CLI, against the built server over a real socket. */
// Each run of the CLI is a process of its own (a second or more on a loaded machine): the tests allow minutes.
describe('the grantd command line', { timeout: 180_000 }, () => {
  let server: RunningServer;
  /** Tenant a's and tenant b's names and admin keys, made with `grantd tenant create`. */
  const a = { name: uniqueName('cli-a'), key: '', id: '' };
  const b = { name: uniqueName('cli-b'), key: '', id: '' };

  const onDatabase = (args: string[]) => runGrantd(args, { DATABASE_URL: databaseUrl() });
  const asTenant = (tenant: { key: string }, args: string[], stdin?: string) =>
    runGrantd(args, { GRANTD_URL: server.baseUrl, GRANTD_KEY: tenant.key }, stdin);
  const ok = async (tenant: { key: string }, args: string[], stdin?: string) => {
    const run = await asTenant(tenant, args, stdin);
    expect(run, args.join(' ')).toMatchObject({ code: 0 });
    return run;
  };
  const json = async (tenant: { key: string }, args: string[]) => JSON.parse((await ok(tenant, [...args, '--json'])).stdout);
  const DOC = { name: 'doc', relations: { owner: {}, viewer: { includes: ['owner'] } } };

  beforeAll(async () => {
    for (const tenant of [a, b]) {
      const created = await onDatabase(['tenant', 'create', tenant.name, '--json']);
      expect(created.code).toBe(0);
      const body = JSON.parse(created.stdout);
      [tenant.key, tenant.id] = [body.key.secret, body.tenant.id];
    }
    server = await startServer({ DATABASE_URL: databaseUrl() });
    for (const tenant of [a, b]) expect((await callGrantd(server.baseUrl, tenant.key, 'POST', '/v1/namespaces', DOC)).status).toBe(201);
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('tells its version, its commands and each command its usage', async () => {
    const { version } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8'));
    expect(await runGrantd(['--version'], {})).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    const help = await runGrantd(['--help'], {});
    expect(help.code).toBe(0);
    const commands = ['serve', 'migrate', 'tenant', 'key', 'check', 'explain', 'subjects', 'grants', 'namespaces', 'agents', 'keys', 'oauth'];
    for (const command of [...commands, 'import', 'export', 'changes']) {
      expect(help.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
    expect(help.stdout).toContain('GRANTD_KEY');
    const checkHelp = await runGrantd(['check', '--help'], {});
    expect(checkHelp.code).toBe(0);
    expect(checkHelp.stdout).toContain('Usage: grantd check [options] <subject> <relation> <object>');
    expect((await runGrantd(['grants', 'list', '--help'], {})).stdout).toContain('--namespace <namespace>');
    // A group without its subcommand shows the group's usage; an unknown command is a usage error.
    const tenant = await runGrantd(['tenant'], {});
    expect(tenant.code).toBe(2);
    expect(tenant.stderr).toMatch(/create \[options\] <name>[\s\S]*list \[options\]/);
    const unknown = await runGrantd(['frobnicate'], {});
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("grantd: unknown command 'frobnicate'");
    const missing = await runGrantd(['check', 'user:alice'], {});
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing required argument 'relation'");
    // A subcommand's usage error names in full the command whose --help tells more.
    const add = await runGrantd(['grants', 'add', 'user:alice', 'viewer', 'doc:d1'], {});
    expect(add).toEqual({ code: 2, stdout: '', stderr: "grantd: unknown command 'add'\n(grantd grants --help tells its usage)\n" });
    const short = await runGrantd(['grants', 'create', 'user:alice'], {});
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('(grantd grants create --help tells its usage)');
    expect((await runGrantd(['oauth', 'clients', 'create'], {})).stderr).toContain('(grantd oauth clients create --help tells its usage)');
    // grants create and revoke, write and delete their aliases.
    expect((await runGrantd(['grants', '--help'], {})).stdout).toMatch(/create\|write \[options\][\s\S]*revoke\|delete \[options\]/);
  });

  it('creates, checks, lists and revokes grants, for people and for scripts', async () => {
    expect((await ok(a, ['grants', 'create', 'user:alice', 'owner', 'doc:d1'])).stdout).toMatch(/^granted: user:alice owner doc:d1 \(since .*Z\)\n$/);
    expect(await json(a, ['grants', 'create', 'user:bob', 'viewer', 'doc:d1'])).toEqual({
      subject: 'user:bob',
      relation: 'viewer',
      object: 'doc:d1',
      created_at: expect.any(String),
      not_before: null,
      expires_at: null,
      revision: expect.any(String),
    });
    expect((await ok(a, ['check', 'user:alice', 'viewer', 'doc:d1'])).stdout).toBe('allowed: user:alice viewer doc:d1\n');
    expect((await ok(a, ['check', 'user:carol', 'viewer', 'doc:d1'])).stdout).toBe('denied: user:carol viewer doc:d1\n');
    expect(await json(a, ['check', 'user:bob', 'owner', 'doc:d1'])).toEqual({ allowed: false });
    expect((await asTenant(a, ['check', 'user:carol', 'viewer', 'doc:d1', '--exit-status'])).code).toBe(3);
    expect((await asTenant(a, ['check', 'user:alice', 'viewer', 'doc:d1', '--exit-status'])).code).toBe(0);

    const table = (await ok(a, ['grants', 'list', '--object', 'doc:d1'])).stdout.split('\n');
    expect(table[0]).toMatch(/^SUBJECT +RELATION +OBJECT +CREATED$/);
    expect(table.slice(1, 3).map((line) => line.split(/ +/).slice(0, 3))).toEqual([
      ['user:alice', 'owner', 'doc:d1'],
      ['user:bob', 'viewer', 'doc:d1'],
    ]);
    const one = await json(a, ['grants', 'list', '--namespace', 'doc', '--limit', '1']);
    expect(one).toEqual({ grants: [expect.objectContaining({ subject: 'user:alice' })], more: true });
    expect(await json(a, ['grants', 'list', '--subject', 'user:bob', '--all'])).toEqual({
      grants: [expect.objectContaining({ object: 'doc:d1' })],
      more: false,
    });

    expect((await ok(a, ['grants', 'revoke', 'user:bob', 'viewer', 'doc:d1'])).stdout).toBe('revoked (if it existed): user:bob viewer doc:d1\n');
    expect(await json(a, ['check', 'user:bob', 'viewer', 'doc:d1'])).toEqual({ allowed: false });
    // The names they had first still work.
    expect((await ok(a, ['grants', 'write', 'user:carol', 'viewer', 'doc:d1'])).stdout).toMatch(/^granted: user:carol viewer doc:d1 /);
    expect(await json(a, ['grants', 'delete', 'user:carol', 'viewer', 'doc:d1'])).toEqual({
      revoked: { subject: 'user:carol', relation: 'viewer', object: 'doc:d1' },
    });
    expect(await json(a, ['check', 'user:carol', 'viewer', 'doc:d1'])).toEqual({ allowed: false });
  });

  it('lists and shows namespaces', async () => {
    const listed = (await ok(a, ['namespaces', 'list'])).stdout;
    expect(listed).toMatch(/^doc +owner, viewer \(includes owner\) +\S+Z$/m);
    expect(listed).toMatch(/^user +open \(any relation\)/m);
    expect((await json(a, ['namespaces', 'list'])).namespaces.map((ns: { name: string }) => ns.name)).toEqual(['agent', 'doc', 'user']);
    expect(await json(a, ['namespaces', 'get', 'doc'])).toMatchObject(DOC);
    expect((await ok(a, ['namespaces', 'get', 'doc'])).stdout).toContain('"includes": [\n');
    const absent = await asTenant(a, ['namespaces', 'get', 'nosuch']);
    expect(absent).toMatchObject({ code: 1, stdout: '' });
    expect(absent.stderr).toContain('namespace-not-found: namespace nosuch does not exist');
  });

  it('registers, lists and removes agents, the killswitch telling what it removed', async () => {
    expect((await ok(a, ['agents', 'create', 'helper', '--scope', 'doc:viewer, doc:owner', '--owner', 'user:alice'])).stdout).toBe(
      'registered agent:helper, scope doc:viewer,doc:owner\n',
    );
    await ok(a, ['grants', 'write', 'agent:helper', 'viewer', 'doc:d2']);
    expect(await json(a, ['agents', 'list'])).toEqual({
      agents: [expect.objectContaining({ external_id: 'helper', owner: 'user:alice', scope: ['doc:viewer', 'doc:owner'] })],
      more: false,
    });
    expect((await ok(a, ['agents', 'list'])).stdout).toMatch(/^agent:helper +doc:viewer,doc:owner +user:alice +- +\S+Z$/m);
    const twice = await asTenant(a, ['agents', 'create', 'helper', '--scope', '*:*']);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('grantd agents create: agent-exists:');
    expect((await ok(a, ['agents', 'delete', 'helper'])).stdout).toBe('removed agent:helper, 1 grants and 0 OAuth clients naming it\n');
    expect(await json(a, ['agents', 'list'])).toEqual({ agents: [], more: false });
  });

  it('creates namespaces from a JSON argument, a file or standard input, listing relations by name', async () => {
    // Declared in neither alphabetical nor the database's order (jsonb sorts keys by length, then bytes).
    const relations = { viewer: { includes: ['editor'] }, editor: { includes: ['owner'] }, owner: {}, blocked: {} };
    expect((await ok(a, ['namespaces', 'create', 'sheet', JSON.stringify(relations)])).stdout).toBe(
      'created namespace sheet: blocked, editor (includes owner), owner, viewer (includes editor)\n',
    );
    expect((await ok(a, ['namespaces', 'list'])).stdout).toMatch(
      /^sheet +blocked, editor \(includes owner\), owner, viewer \(includes editor\) +\S+Z$/m,
    );
    expect((await ok(a, ['namespaces', 'get', 'sheet'])).stdout).toMatch(/"blocked"[\s\S]*"editor"[\s\S]*"owner"[\s\S]*"viewer"/);
    const folder = mkdtempSync(join(tmpdir(), 'grantd-cli-'));
    try {
      writeFileSync(join(folder, 'folder.json'), JSON.stringify({ owner: {}, viewer: { includes: ['owner', 'parent->viewer'] }, parent: {} }));
      expect(await json(a, ['namespaces', 'create', 'folder', '--file', join(folder, 'folder.json')])).toMatchObject({
        name: 'folder',
        relations: { parent: {}, viewer: { includes: ['owner', 'parent->viewer'] } },
        revision: expect.any(String),
      });
      const missingFile = await asTenant(a, ['namespaces', 'create', 'x', '--file', join(folder, 'nosuch.json')]);
      expect(missingFile.code).toBe(2);
      expect(missingFile.stderr).toMatch(/^grantd namespaces create: cannot read .*nosuch\.json: ENOENT/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
    expect((await ok(a, ['namespaces', 'create', 'team', '--file', '-'], '{"member": {}}')).stdout).toBe('created namespace team: member\n');
    expect((await ok(a, ['namespaces', 'create', 'tag'])).stdout).toBe('created namespace tag: open (any relation)\n');
    const notJson = await asTenant(a, ['namespaces', 'create', 'bad', '{owner: {}}']);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/^grantd namespaces create: the relations argument are not JSON: .*property name/);
    expect((await asTenant(a, ['namespaces', 'create', 'bad', '{}', '--file', '-'])).stderr).toContain('give the relations or --file, not both');
    const undeclared = await asTenant(a, ['namespaces', 'create', 'bad', '{"viewer": {"includes": ["owner"]}}']);
    expect(undeclared.code).toBe(1);
    // The field at fault, named once: in the detail, not again as an item.
    expect(undeclared.stderr).toMatch(/^grantd namespaces create: invalid-namespace: relations\.viewer\.includes\[0\]: [^\n]*owner[^\n]*\n$/);
    const twice = await asTenant(a, ['namespaces', 'create', 'sheet', '{"owner": {}}']);
    expect(twice.stderr).toContain('grantd namespaces create: namespace-exists:');
  });

  it('explains a check and lists the subjects that hold a relation', async () => {
    await ok(a, ['grants', 'create', 'user:erin', 'owner', 'sheet:s1']);
    await ok(a, ['grants', 'create', 'user:frank', 'viewer', 'sheet:s1']);
    expect((await ok(a, ['explain', 'user:erin', 'viewer', 'sheet:s1'])).stdout).toBe(
      'allowed: user:erin viewer sheet:s1\n  through:\n    user:erin owner sheet:s1 (includes:owner)\n',
    );
    expect((await ok(a, ['explain', 'user:gina', 'viewer', 'sheet:s1'])).stdout).toBe('denied: user:gina viewer sheet:s1\n  reason: no-path\n');
    expect(await json(a, ['explain', 'user:frank', 'viewer', 'sheet:s1'])).toEqual({
      allowed: true,
      path: [{ subject: 'user:frank', relation: 'viewer', object: 'sheet:s1', via: 'direct' }],
      reason: null,
    });
    expect((await ok(a, ['subjects', 'viewer', 'sheet:s1'])).stdout).toBe('user:erin\nuser:frank\n');
    expect(await json(a, ['subjects', 'viewer', 'sheet:s1', '--limit', '1'])).toEqual({ subjects: ['user:erin'], more: true });
    expect(await json(a, ['subjects', 'owner', 'sheet:s1', '--all'])).toEqual({ subjects: ['user:erin'], more: false });
    expect((await ok(a, ['subjects', 'viewer', 'sheet:s1', '--subject-namespace', 'agent'])).stdout).toBe('(none)\n');
    const unknown = await asTenant(a, ['subjects', 'reader', 'sheet:s1']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('grantd subjects: unknown-relation:');
  });

  it("creates, lists and deletes OAuth clients, a confidential one's secret printed once", async () => {
    const created = await json(a, ['oauth', 'clients', 'create', 'reports', '--scopes', 'check:read,grant:read']);
    expect(created).toMatchObject({
      client_id: expect.stringMatching(/^oc_/),
      client_secret: expect.stringMatching(/^svc_cs_/),
      type: 'confidential',
      scopes: ['check:read', 'grant:read'],
    });
    const spa = await ok(a, [
      'oauth',
      'clients',
      'create',
      'spa',
      '--type',
      'public',
      '--redirect-uri',
      'https://app.example.com/callback',
      '--redirect-uri',
      'https://app.example.com/again',
    ]);
    expect(spa.stdout).toMatch(/^created public OAuth client oc_\w+ \(check:read\)\n$/);
    const human = await ok(a, ['oauth', 'clients', 'create', 'batch']);
    expect(human.stdout).toMatch(/Client secret of oc_\w+, shown ONCE:\n\n {3}svc_cs_\w+\n/);
    const listed = (await ok(a, ['oauth', 'clients', 'list'])).stdout;
    expect(listed).toMatch(/^CLIENT ID +NAME +TYPE +SCOPES +AGENT +CREATED +REDIRECT URIS$/m);
    expect(listed).toMatch(new RegExp(`^${created.client_id} +reports +confidential +check:read,grant:read +- +\\S+Z +-$`, 'm'));
    expect(listed).toMatch(/^oc_\w+ +spa +public +check:read +- +\S+Z +https:\/\/app\.example\.com\/callback https:\/\/app\.example\.com\/again$/m);
    expect(listed).not.toContain(created.client_secret);
    const refused = await asTenant(a, ['oauth', 'clients', 'create', 'spa2', '--type', 'public']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^grantd oauth clients create: invalid-request: /);
    expect((await asTenant(a, ['oauth', 'clients', 'create', 'x', '--type', 'secret'])).code).toBe(2);
    expect((await ok(a, ['oauth', 'clients', 'delete', created.client_id])).stdout).toBe(`deleted ${created.client_id}: its tokens no longer work\n`);
    expect((await json(a, ['oauth', 'clients', 'list'])).clients.map((c: { name: string }) => c.name).sort()).toEqual(['batch', 'spa']);
    expect((await asTenant(a, ['oauth', 'clients', 'delete', created.client_id])).stderr).toContain('grantd oauth clients delete: client-not-found:');
  });

  it('creates, lists and revokes keys; a key of too little scope is told which it needs', async () => {
    const created = await json(a, ['keys', 'create', '--scopes', 'check:read,grant:read', '--label', 'ci']);
    expect(created).toMatchObject({
      id: expect.stringMatching(/^key_/),
      secret: expect.stringMatching(/^svc_live_/),
      scopes: ['check:read', 'grant:read'],
    });
    const human = await ok(a, ['keys', 'create']);
    expect(human.stdout).toMatch(/API key key_\w+ \(check:read\), shown ONCE:\n\n {3}svc_live_\w+\n/);
    const listed = (await ok(a, ['keys', 'list'])).stdout;
    expect(listed).toMatch(new RegExp(`^${created.id} +${created.secret.slice(0, 17)} +check:read,grant:read +ci +\\S+Z +never$`, 'm'));
    expect(listed).not.toContain(created.secret);
    const reader = { key: created.secret as string };
    const refused = await asTenant(reader, ['grants', 'create', 'user:x', 'owner', 'doc:d3']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('grantd grants create: insufficient-scope: this operation needs a key with scope grant:write');
    expect(refused.stderr).toContain('use a key with that scope');
    expect((await ok(a, ['keys', 'revoke', created.id])).stdout).toBe(`revoked ${created.id}\n`);
    const revoked = await asTenant(reader, ['check', 'user:x', 'owner', 'doc:d3']);
    expect(revoked.code).toBe(1);
    expect(revoked.stderr).toContain('grantd check: unauthenticated:');
    expect(revoked.stderr).not.toContain(created.secret);
    const again = await asTenant(a, ['keys', 'revoke', created.id]);
    expect(again.stderr).toContain('key-not-found');
  });

  it('exports every grant as NDJSON that imports into another tenant, which then exports the same', async () => {
    const grants = Array.from({ length: 1203 }, (_, i) => ({
      subject: `user:e${i}`,
      relation: i % 2 ? 'viewer' : 'owner',
      object: `doc:exp${i % 9}`,
    }));
    const windowed = [
      { subject: 'user:w1', relation: 'owner', object: 'doc:expw', expires_at: '2999-01-01T00:00:00.000Z' },
      { subject: 'user:w2', relation: 'owner', object: 'doc:expw', not_before: '2998-01-01T00:00:00.000Z', expires_at: '2999-01-01T00:00:00.000Z' },
    ];
    await ok(a, ['import'], [...grants, ...windowed].map((g) => JSON.stringify(g)).join('\n'));
    const exported = await ok(a, ['export', '--namespace', 'doc']);
    expect(exported.stderr).toMatch(/^grantd export: \d+ grants\n$/);
    const lines = exported.stdout.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(grants.length + windowed.length);
    // Grants without times are their triple alone; a grant's times come with it.
    expect(lines.map((line) => JSON.parse(line))).toEqual(expect.arrayContaining([...grants, ...windowed]));

    const imported = await ok(b, ['import', '--json'], exported.stdout);
    expect(JSON.parse(imported.stdout)).toMatchObject({ grants: lines.length, written: lines.length });
    expect((await ok(b, ['export'])).stdout).toBe(exported.stdout);
    expect(await json(b, ['check', 'user:e1', 'viewer', 'doc:exp1'])).toEqual({ allowed: true });
  });

  it('prints the changes feed as NDJSON from a revision, and says what to do with one it cannot read from', async () => {
    const written = await callGrantd(server.baseUrl, b.key, 'POST', '/v1/grants', { subject: 'user:feed', relation: 'owner', object: 'doc:feed1' });
    const revision = written.headers['grantd-revision'] as string;
    await callGrantd(server.baseUrl, b.key, 'POST', '/v1/grants', { subject: 'user:feed', relation: 'owner', object: 'doc:feed2' });
    let lines: { revision: string; kind: string; op: string; object: string }[] = [];
    // A transaction open elsewhere on the database holds the feed back a moment.
    await expect
      .poll(
        async () => {
          lines = (await ok(b, ['changes', '--after', revision])).stdout
            .trimEnd()
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line));
          return lines.length;
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBe(1);
    expect(lines[0]).toMatchObject({ kind: 'grant', op: 'create', object: 'doc:feed2', revision: expect.any(String) });
    const forged = await asTenant(b, ['changes', '--after', 'WyIxIiwiMSJd.forged']);
    expect(forged.code).toBe(1);
    expect(forged.stderr).toMatch(/^grantd changes: invalid-revision: .*\n {2}pass a revision this tenant was given/);
  });

  it('lists tenants and makes a new admin key on the database, the way back in after a lost one', async () => {
    const tenants = JSON.parse((await onDatabase(['tenant', 'list', '--json'])).stdout).tenants;
    expect(tenants).toEqual(
      expect.arrayContaining([{ id: a.id, name: a.name, created_at: expect.any(String) }, expect.objectContaining({ name: b.name })]),
    );
    expect((await onDatabase(['tenant', 'list'])).stdout).toMatch(new RegExp(`^${a.name} +${a.id} +\\S+Z$`, 'm'));

    const recovered = await onDatabase(['key', 'create', '--tenant', a.name, '--json']);
    expect(recovered.code).toBe(0);
    const body = JSON.parse(recovered.stdout);
    expect(body).toMatchObject({ tenant: { id: a.id, name: a.name }, key: { scopes: ['admin'], label: 'recovery' } });
    // The new key is the tenant's admin: it sees a's keys and grants.
    expect((await json({ key: body.key.secret }, ['keys', 'list'])).keys.map((k: { id: string }) => k.id)).toContain(body.key.id);
    expect(await json({ key: body.key.secret }, ['check', 'user:alice', 'owner', 'doc:d1'])).toEqual({ allowed: true });

    const human = await onDatabase(['key', 'create', '--tenant', a.name, '--scopes', 'grant:read']);
    expect(human.stdout).toMatch(new RegExp(`Tenant "${a.name}": API key key_\\w+ \\(grant:read\\), shown ONCE:\\n\\n {3}svc_live_\\w+\\n`));
    const nobody = await onDatabase(['key', 'create', '--tenant', 'no-such-tenant']);
    expect(nobody).toMatchObject({ code: 1, stderr: 'grantd key create: no tenant named no-such-tenant (grantd tenant list shows them)\n' });
    const badScope = await onDatabase(['key', 'create', '--tenant', a.name, '--scopes', 'root']);
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toContain('unknown scope root; scopes are check:read, grant:read, grant:write, admin');
    expect((await onDatabase(['key', 'create'])).stderr).toContain("required option '--tenant <name>' not specified");
  });

  it('says what is wrong with a malformed subject or object, and the rule', async () => {
    const cases = [
      [['grants', 'create', 'User:alice', 'owner', 'doc:d1'], 'invalid-subject', '"User" has upper-case letters; write "user"'],
      [['check', 'alice', 'owner', 'doc:d1'], 'invalid-subject', '"alice" has no colon between namespace and id'],
      [
        ['grants', 'revoke', 'user:alice', 'owner', 'doc:d 1'],
        'invalid-object',
        'the id holds " " (U+0020): ids are 1-256 characters of A-Z a-z 0-9 . _ - @ | ~ + =',
      ],
    ] as const;
    for (const [args, type, explained] of cases) {
      const run = await asTenant(a, [...args]);
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr).toContain(`grantd ${args[0]}${args[0] === 'check' ? '' : ` ${args[1]}`}: ${type}:`);
      expect(run.stderr).toContain(explained);
    }
  });

  it('needs GRANTD_KEY and a URL, and names the server it cannot reach', async () => {
    expect(await runGrantd(['grants', 'list'], { GRANTD_URL: server.baseUrl })).toEqual({
      code: 2,
      stdout: '',
      stderr: 'grantd grants list: set GRANTD_KEY to an API key with scope grant:read\n',
    });
    expect((await runGrantd(['keys', 'list'], { GRANTD_URL: 'nowhere', GRANTD_KEY: a.key })).stderr).toBe(
      'grantd keys list: GRANTD_URL is not a URL: nowhere\n',
    );
    const down = await runGrantd(['namespaces', 'list'], { GRANTD_URL: 'http://127.0.0.1:9', GRANTD_KEY: a.key });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('grantd namespaces list: network-error:');
    expect(down.stderr).toContain('(http://127.0.0.1:9)');
    expect(down.stderr).toContain('is grantd running there?');
    expect(down.stderr).not.toMatch(/\n\s+at /);
  });

  it('names the failing item of a batch, whatever the failure', async () => {
    const item = (i: number) => ({ subject: `user:b${i}`, relation: 'owner', object: 'doc:batch' });
    const res = await callGrantd(server.baseUrl, a.key, 'POST', '/v1/grants/batch', {
      writes: [item(0), item(1), item(2), { ...item(3), object: 'nosuch:x' }],
    });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      type: 'namespace-not-found',
      errors: [{ path: 'writes[3].object', message: 'namespace nosuch does not exist' }],
    });
    const agent = await callGrantd(server.baseUrl, a.key, 'POST', '/v1/grants/batch', { writes: [item(0), { ...item(1), subject: 'agent:ghost' }] });
    expect(agent.body).toMatchObject({ type: 'agent-not-found', errors: [{ path: 'writes[1].subject' }] });
  });

  it('starts with a line for people naming the API and /docs, and logs requests with the tenant and the problem type', async () => {
    const lines = server.output().split('\n');
    const port = new URL(server.baseUrl).port;
    const ready = `grantd is ready: the API at ${server.baseUrl}/v1, its reference at ${server.baseUrl}/docs, the console at http://localhost:${port}/console/`;
    expect(lines.filter((line) => line.startsWith(ready))).toHaveLength(1);
    expect(lines.some((line) => line.includes('"msg":"grantd listening"'))).toBe(true);

    const requestId = uniqueName('log');
    const res = await fetch(`${server.baseUrl}/v1/check`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${a.key}`, 'Content-Type': 'application/json', 'X-Request-Id': requestId },
      body: JSON.stringify({ subject: 'user:alice', relation: 'viewer', object: 'nosuch:x' }),
    });
    expect(res.status).toBe(404);
    const logged = async () =>
      server
        .output()
        .split('\n')
        .find((line) => line.includes(requestId));
    await expect.poll(logged).toBeDefined();
    expect(JSON.parse((await logged())!)).toMatchObject({ msg: 'request', status: 404, tenant: a.id, problem: 'namespace-not-found' });
    // Before authentication there is no tenant, and a success has no problem.
    await fetch(`${server.baseUrl}/v1/check`, { method: 'POST', headers: { 'X-Request-Id': `${requestId}-anon` } });
    await expect.poll(() => server.output().includes(`"${requestId}-anon"`)).toBe(true);
    const anonymous = JSON.parse(
      server
        .output()
        .split('\n')
        .find((line) => line.includes(`"${requestId}-anon"`))!,
    );
    expect(anonymous).toMatchObject({ status: 401, problem: 'unauthenticated' });
    expect(anonymous).not.toHaveProperty('tenant');
  });
});

describe('grantd on a database it cannot use', { timeout: 180_000 }, () => {
  const dbName = `grantd_missing_${Date.now()}`;
  /** The test database's server, with a database that does not exist on it. */
  const missing = new URL(databaseUrl());
  missing.pathname = `/${dbName}`;
  const at = `${missing.hostname}:${missing.port || 5432}`.replaceAll('.', '\\.');

  it.each([
    [
      'not running',
      'postgres://postgres@127.0.0.1:9/grantd',
      /^grantd: cannot reach PostgreSQL at 127\.0\.0\.1:9 \(ECONNREFUSED\) for database grantd: start PostgreSQL there, or set DATABASE_URL/,
    ],
    [
      'missing',
      missing.toString(),
      new RegExp(`^grantd: database ${dbName} does not exist on ${at}: create it \\(createdb -h .* ${dbName}\\), or set DATABASE_URL`),
    ],
  ])('says so in one line when it is %s, for serve, migrate, tenant and key', async (_, url, said) => {
    for (const args of [['serve'], ['migrate'], ['tenant', 'create', 'x'], ['tenant', 'list'], ['key', 'create', '--tenant', 'x']]) {
      const run = await runGrantd(args, { DATABASE_URL: url, PORT: '0', LOG_LEVEL: 'warn' });
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr).toMatch(said);
      expect(run.stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
    }
  });

  it('names no password', async () => {
    const run = await runGrantd(['migrate'], { DATABASE_URL: 'postgres://grantd:hunter2secret@127.0.0.1:9/grantd' });
    expect(run.stderr).toContain('127.0.0.1:9');
    expect(run.stderr).not.toContain('hunter2secret');
  });

  afterAll(async () => {
    // Nothing above may have created the database it was told is missing.
    const client = new pg.Client({ connectionString: databaseUrl() });
    await client.connect();
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [dbName]);
    await client.end();
    expect(found.rowCount).toBe(0);
  });
});
