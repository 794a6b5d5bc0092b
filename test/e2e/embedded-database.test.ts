import { chmodSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { callGrantd, printedKey, runGrantd, startServer, type RunningServer } from './serve.ts';

/**
 * What a first run prints besides the admin key's banner and the line that says where to go: short
 * JSON log lines at level info, each one thing said in words. Anything else is returned as noise.
 */
function noiseIn(output: string): string[] {
  let inBanner = false;
  return output.split('\n').filter((line) => {
    if (/^=+$/.test(line)) inBanner = !inBanner;
    if (inBanner || /^=+$/.test(line) || line === '' || line.startsWith('grantd is ready: ')) return false;
    if (!line.startsWith('{') || line.length > 250) return true;
    const entry = JSON.parse(line) as { level: number; msg: string };
    return entry.level !== 30 || /terminat/i.test(entry.msg);
  });
}

const jsonLogLines = (output: string) => output.split('\n').filter((line) => line.startsWith('{'));

/** The process id of the data folder's postmaster, from the first line of its postmaster.pid. */
const postmasterPid = (dataDir: string) => Number(readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);

/**
 * `grantd serve` on its embedded PostgreSQL, killed under it: this brings its own databases, so it
 * runs once, in the embedded project.
 */
describe.runIf(inject('databaseKind') === 'embedded')('grantd serve on its embedded database', () => {
  let dir: string;
  let dataDir: string;
  let server: RunningServer;
  let key: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'grantd-embedded-'));
    chmodSync(dir, 0o711); // as root, PostgreSQL runs as user postgres and must get through
    dataDir = join(dir, 'data');
    server = await startServer({ GRANTD_DATA_DIR: dataDir });
    key = printedKey(server.output())!;
  }, 120_000);

  afterAll(async () => {
    await server?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const readiness = async () => (await callGrantd(server.baseUrl, null, 'GET', '/readyz')).status;

  it('starts quietly the first time: the banner, where to go, and a few short lines', () => {
    expect(key).toMatch(/^svc_live_/);
    expect(noiseIn(server.output())).toEqual([]);
    expect(jsonLogLines(server.output()).length).toBeLessThanOrEqual(5);
    expect(server.output()).toMatch(/"msg":"applied \d+ migrations to the database"/);
  });

  it('restarts its PostgreSQL when it dies, not ready meanwhile, and answers again', async () => {
    expect(await readiness()).toBe(200);
    process.kill(postmasterPid(dataDir), 'SIGKILL');
    await expect.poll(readiness, { timeout: 5_000, interval: 50 }).toBe(503);
    await expect.poll(readiness, { timeout: 30_000, interval: 200 }).toBe(200);
    expect(server.output()).toMatch(/"level":40,.*"msg":"the embedded PostgreSQL \(pid \d+\) exited on SIGKILL; starting it again in 1 s"/);
    expect(server.output()).toMatch(/"msg":"the embedded PostgreSQL runs again"/);
    const created = await callGrantd(server.baseUrl, key, 'POST', '/v1/namespaces', { name: 'doc' });
    expect(created.status).toBe(201);
  });

  it('stops within 10 s on SIGTERM while its PostgreSQL is down', async () => {
    process.kill(postmasterPid(dataDir), 'SIGKILL');
    await expect.poll(readiness, { timeout: 5_000, interval: 50 }).toBe(503);
    const during = callGrantd(server.baseUrl, key, 'GET', '/v1/namespaces').catch(() => null);
    const began = Date.now();
    expect(await server.stop('SIGTERM')).toBe(0);
    expect(Date.now() - began).toBeLessThan(10_000);
    await during;
    expect(server.output()).toMatch(/"msg":"stopped"/);
  });

  it('runs a database command quietly: its output on stdout, nothing on stderr', async () => {
    const listed = await runGrantd(['tenant', 'list', '--json'], { GRANTD_DATA_DIR: dataDir });
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(listed.stdout).tenants.map((tenant: { name: string }) => tenant.name)).toEqual(['default']);

    // On a folder of its own, the first command says only that it creates the database.
    const fresh = await runGrantd(['tenant', 'list', '--json'], { GRANTD_DATA_DIR: join(dir, 'fresh') });
    expect(fresh.code).toBe(0);
    expect(JSON.parse(fresh.stdout)).toEqual({ tenants: [] });
    expect(fresh.stderr.trim().split('\n')).toEqual([expect.stringMatching(/"msg":"initialising the embedded database in .*fresh/)]);
  }, 60_000);

  it('exits 1 with the reason when its PostgreSQL keeps failing to start', async () => {
    server = await startServer({ GRANTD_DATA_DIR: dataDir });
    process.kill(postmasterPid(dataDir), 'SIGKILL');
    // PostgreSQL refuses a data folder without its version file.
    renameSync(join(dataDir, 'pg', 'PG_VERSION'), join(dataDir, 'pg', 'PG_VERSION.away'));
    const code = await new Promise<number | null>((resolve) => server.process.once('exit', resolve));
    expect(code).toBe(1);
    expect(server.output()).toMatch(
      /"level":50,.*"msg":"the embedded PostgreSQL did not start again: FATAL: .*is not a valid data directory; it has exited 6 times within 10 minutes, so grantd stops"/,
    );
    expect(server.output()).toMatch(/"msg":"stopped"/);
  }, 60_000);
});
