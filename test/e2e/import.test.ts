import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { createServices } from '../../src/runtime.ts';
import { createKey } from '../../src/store/keys.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { databaseUrl, uniqueName } from '../helpers.ts';
import { runGrantd, startServer, type RunningServer } from './serve.ts';

/** `grantd import`, the built CLI, against the built server over a real socket. */
describe('grantd import', () => {
  let server: RunningServer;
  let dir: string;
  let writer: string;
  let reader: string;

  const importing = (args: string[], env: Record<string, string>, stdin?: string) => runGrantd(['import', ...args], env, stdin);
  const asWriter = (args: string[], stdin?: string) => importing(args, { GRANTD_URL: server.baseUrl, GRANTD_KEY: writer }, stdin);

  const allowed = async (subject: string, object: string): Promise<boolean> => {
    const res = await fetch(`${server.baseUrl}/v1/check`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ subject, relation: 'viewer', object }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { allowed: boolean }).allowed;
  };
  const file = (name: string, lines: string[], eol = '\n'): string => {
    const path = join(dir, name);
    writeFileSync(path, lines.join(eol) + eol);
    return path;
  };
  const grant = (user: number, doc: string) => JSON.stringify({ subject: `user:u${user}`, relation: 'viewer', object: `idoc:${doc}` });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'grantd-import-'));
    const services = createServices(databaseUrl(), { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 1 }, pino({ level: 'silent' }));
    const tenant = await createTenant(services.db, uniqueName('import'));
    writer = (await createKey(services.db, tenant.tenant.id, 'import', ['grant:write', 'check:read'])).secret;
    reader = (await createKey(services.db, tenant.tenant.id, 'read only', ['check:read'])).secret;
    await services.close();
    server = await startServer({ DATABASE_URL: databaseUrl() });
    const res = await fetch(`${server.baseUrl}/v1/namespaces`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tenant.key.secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'idoc', relations: { owner: {}, viewer: { includes: ['owner'] } } }),
    });
    expect(res.status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes every line of a file in batches of 1000, and the grants answer checks at once', async () => {
    // 2,500 grants over three batches; a byte-order mark, CRLF line ends, a blank line and a repeated grant.
    const lines = Array.from({ length: 2500 }, (_, i) => grant(i, `big${i % 7}`));
    lines[0] = `\uFEFF${lines[0]}`;
    lines.splice(1200, 0, '', grant(5, 'big5'));
    const run = await asWriter([file('big.ndjson', lines, '\r\n')]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      new RegExp(`^imported 2501 grants from ${join(dir, 'big.ndjson')}: 2500 new, 1 already present \\(\\d+\\.\\d s\\)\\n$`),
    );
    expect(await allowed('user:u0', 'idoc:big0')).toBe(true);
    // The last line (2499 % 7 === 0), sent in the last batch.
    expect(await allowed('user:u2499', 'idoc:big0')).toBe(true);
    expect(await allowed('user:u2499', 'idoc:big1')).toBe(false);
  });

  it('reads standard input, says what it did as JSON, and changes nothing the second time', async () => {
    const input = [grant(1, 'in1'), grant(2, 'in2')].join('\n');
    const first = await asWriter(['--json'], input);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ grants: 2, written: 2, seconds: expect.any(Number) });
    const again = await asWriter(['-', '--json'], input);
    expect(JSON.parse(again.stdout)).toMatchObject({ grants: 2, written: 0 });
    expect(await allowed('user:u2', 'idoc:in2')).toBe(true);
  });

  it('stops at a line that is not a grant, naming it, before sending the batch it is in', async () => {
    const notJson = await asWriter([file('bad-json.ndjson', [grant(1, 'bj'), grant(2, 'bj'), '{"subject": "user:u3",'])]);
    expect(notJson.code).toBe(1);
    expect(notJson.stdout).toBe('');
    expect(notJson.stderr).toContain('line 3: not JSON');
    expect(notJson.stderr).toContain('0 new grants were written before it stopped');
    expect(await allowed('user:u1', 'idoc:bj')).toBe(false);

    const badShape = await asWriter([
      file('bad-shape.ndjson', [grant(1, 'bs'), '{"subject": "alice", "relation": "viewer", "object": "idoc:bs", "extra": 1}']),
    ]);
    expect(badShape.code).toBe(1);
    expect(badShape.stderr).toMatch(
      /line 2: subject: must be <namespace>:<id>.*"alice" has no colon between namespace and id; Unrecognized key.*'extra'/,
    );
  });

  it('reports a batch the server refuses by its lines, and keeps the batches written before it', async () => {
    const lines = Array.from({ length: 2000 }, (_, i) => grant(i, 'nb'));
    lines[1499] = JSON.stringify({ subject: 'user:u1', relation: 'viewer', object: 'nosuch:x' });
    const run = await asWriter([file('refused.ndjson', lines)]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('lines 1001-2000: the server refused the batch, so none of them was written (namespace-not-found:');
    expect(run.stderr).toContain('1000 new grants were written before it stopped; rerunning the whole import is safe');
    expect(await allowed('user:u999', 'idoc:nb')).toBe(true);
    expect(await allowed('user:u1000', 'idoc:nb')).toBe(false);
  });

  it('needs a key with grant:write, a server and a readable file', async () => {
    const input = grant(1, 'k');
    const noKey = await importing([], { GRANTD_URL: server.baseUrl }, input);
    expect(noKey).toMatchObject({ code: 2, stderr: 'grantd import: set GRANTD_KEY to an API key with scope grant:write\n' });
    const readOnly = await importing([], { GRANTD_URL: server.baseUrl, GRANTD_KEY: reader }, input);
    expect(readOnly.code).toBe(1);
    expect(readOnly.stderr).toContain('(insufficient-scope: this operation needs a key with scope grant:write)');
    const unknownKey = await importing([], { GRANTD_URL: server.baseUrl, GRANTD_KEY: `svc_live_${'x'.repeat(43)}` }, input);
    expect(unknownKey.stderr).toContain('(unauthenticated:');
    expect(unknownKey.stderr).not.toContain('x'.repeat(43));
    const noServer = await importing([], { GRANTD_URL: 'http://127.0.0.1:9', GRANTD_KEY: writer }, input);
    expect(noServer.code).toBe(1);
    expect(noServer.stderr).toContain('lines 1-1: no answer from the server, so they may or may not have been written (network-error:');
    const badUrl = await importing([], { GRANTD_URL: 'not a url', GRANTD_KEY: writer }, input);
    expect(badUrl).toMatchObject({ code: 2, stderr: 'grantd import: GRANTD_URL is not a URL: not a url\n' });
    const missing = await asWriter([join(dir, 'missing.ndjson')]);
    expect(missing).toMatchObject({ code: 1, stderr: `grantd import: cannot read ${join(dir, 'missing.ndjson')}: ENOENT\n` });
    const directory = await asWriter([dir]);
    expect(directory.code).toBe(1);
    expect(directory.stderr).toContain('cannot read it: EISDIR');
  });
});
