import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTenant, uniqueName, type TestTenant } from '../helpers.ts';
import { useRealServer } from './support.ts';

// The @grantd/client workspace (packages/client, docs/client.md#installing) as a user gets it: built,
// packed by npm, installed from the tarball into an empty app, type-checked by tsc against a small
// program, and that program run by Node.js against a real server.

const ROOT = join(import.meta.dirname, '..', '..');
const PACKAGE_DIR = join(ROOT, 'packages', 'client');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const run = promisify(execFile);

const server = useRealServer();
let app: string;
let packed: { filename: string; files: { path: string }[] };
let tenant: TestTenant;

/** The app's program: real calls, and misuses its types must refuse (each `@ts-expect-error` fails tsc when unneeded). */
const PROGRAM = `
import { createClient, ProblemError, ServiceError, type CheckResult, type Grant } from '@grantd/client';

export async function run(baseUrl: string, apiKey: string, namespace: string) {
  const grantd = createClient({ apiKey, baseUrl });
  await grantd.namespaces.create({ name: namespace, relations: { owner: {}, viewer: { includes: ['owner'] } } });
  const grant: Grant = await grantd.grants.create({ subject: 'user:alice', relation: 'owner', object: namespace + ':q3' });
  const alice: CheckResult = await grantd.check({ subject: 'user:alice', relation: 'viewer', object: namespace + ':q3' });
  const bob = await grantd.check({ subject: 'user:bob', relation: 'viewer', object: namespace + ':q3' }, { timeoutMs: 2000 });
  try {
    await grantd.check({ subject: 'alice', relation: 'viewer', object: namespace + ':q3' });
    return { unexpected: 'a malformed subject was accepted' };
  } catch (error) {
    if (!(error instanceof ProblemError)) throw error;
    return { grant, alice: alice.allowed, bob: bob.allowed, problem: { type: error.type, status: error.status, service: error instanceof ServiceError } };
  }
}

export function misuses(grantd: ReturnType<typeof createClient>) {
  // @ts-expect-error relation and object are required
  void grantd.check({ subject: 'user:alice' });
  // @ts-expect-error a check answers { allowed: boolean }
  const answer: Promise<{ allowed: string }> = grantd.check({ subject: 'user:a', relation: 'viewer', object: 'doc:b' });
  // @ts-expect-error there is no such method
  void grantd.grants.update;
  return answer;
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2022', 'DOM'],
    types: [],
    strict: true,
    // The package's declarations are checked too, not taken on trust.
    skipLibCheck: false,
    outDir: 'out',
  },
  files: ['app.ts'],
};

/** The size of every file under dir, in bytes. */
const bytesUnder = (dir: string): number =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + statSync(join(e.parentPath, e.name)).size, 0);

beforeAll(async () => {
  app = mkdtempSync(join(tmpdir(), 'grantd-client-app-'));
  await run(process.execPath, [TSC, '-b', PACKAGE_DIR]);
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', app], { cwd: PACKAGE_DIR });
  [packed] = JSON.parse(stdout) as [typeof packed];
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  writeFileSync(join(app, 'app.ts'), PROGRAM);
  // From the npm cache when it holds the dependencies, else from the registry.
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${packed.filename}`], { cwd: app });
  tenant = await newTenant(server.services);
}, 180_000);

afterAll(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

describe('the @grantd/client package', () => {
  it('packs the built client and contract, with declarations, and nothing of the server', () => {
    const paths = packed.files.map((f) => f.path);
    expect(paths.filter((p) => !/^(package\.json|README\.md|dist\/(src\/client|contract)\/[\w-]+\.(js|d\.ts))$/.test(p))).toEqual([]);
    for (const entry of ['dist/src/client/index.js', 'dist/src/client/index.d.ts', 'dist/contract/index.js']) expect(paths).toContain(entry);
  });

  it('has the version of the server it was built with', () => {
    const versionOf = (dir: string) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
    expect(versionOf(PACKAGE_DIR)).toBe(versionOf(ROOT));
  });

  it('installs into an empty app with only what it needs at run time', () => {
    const modules = join(app, 'node_modules');
    const installed = readdirSync(modules)
      .filter((name) => !name.startsWith('.'))
      .flatMap((name) => (name.startsWith('@') ? readdirSync(join(modules, name)).map((scoped) => `${name}/${scoped}`) : [name]));
    expect(installed.sort()).toEqual(['@grantd/client', '@ts-rest/core', 'zod']);
    expect(bytesUnder(modules)).toBeLessThan(12 * 1024 * 1024);
  });

  it('type-checks a program against it with tsc, refusing misuse, and the program runs against a real server', async () => {
    const compiled = await run(process.execPath, [TSC, '-p', app], { cwd: app }).catch((error: { stdout: string }) => error);
    expect(compiled.stdout).toBe('');
    const namespace = uniqueName('pkg').replace(/-/g, '_');
    const script = 'const { run } = await import("./out/app.js"); console.log(JSON.stringify(await run(...process.argv.slice(1))));';
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, server.url, tenant.adminKey, namespace], { cwd: app });
    expect(JSON.parse(stdout)).toMatchObject({
      grant: { subject: 'user:alice', relation: 'owner', object: `${namespace}:q3`, created_at: expect.any(String) },
      alice: true,
      bob: false,
      problem: { type: 'invalid-subject', status: 400, service: true },
    });
  }, 60_000);
});
