import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { EdgeVM } from '@edge-runtime/vm';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_NAMESPACE, newTenant, type TestTenant } from '../helpers.ts';
import { json, problem, useFaultServer, useRealServer } from './support.ts';

// The client bundled for the web platform (no Node built-ins available) and run inside the Edge
// Runtime VM, making real calls to a real server.
const ROOT = join(import.meta.dirname, '..', '..');
const SOURCE_ENTRY = join(ROOT, 'src', 'client', 'index.ts');
// What the @grantd/client package ships (packages/client, built by `npm run build`).
const BUILT_ENTRY = join(ROOT, 'packages', 'client', 'dist', 'src', 'client', 'index.js');
const BUILD_INFO = join(ROOT, 'packages', 'client', 'dist', '.tsbuildinfo');
const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

const server = useRealServer();
const faults = useFaultServer();

function newestMtime(dir: string): number {
  return Math.max(
    ...readdirSync(dir, { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs),
  );
}

/**
 * Whether packages/client/dist/ holds a build of the current client and contract sources (`npm run build`).
 * An incremental build leaves unchanged outputs alone, so its build info file, rewritten by every build, dates it.
 */
const builtIsFresh = (() => {
  if (!existsSync(BUILT_ENTRY) || !existsSync(BUILD_INFO)) return false;
  const built = statSync(BUILD_INFO).mtimeMs;
  return built >= newestMtime(join(ROOT, 'src', 'client')) && built >= newestMtime(join(ROOT, 'contract'));
})();

async function bundle(entry: string): Promise<{ code: string; metafile: Metafile }> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'neutral', // no Node built-ins: importing one fails to resolve
    mainFields: ['module', 'main'],
    format: 'iife',
    globalName: 'grantdClient',
    target: 'es2022',
    logLevel: 'silent',
  });
  return { code: result.outputFiles[0]!.text, metafile: result.metafile };
}

/** Every module the bundle imports, with how it was imported. */
const importsOf = (metafile: Metafile) => Object.values(metafile.inputs).flatMap((input) => input.imports);

const entries: [string, string, boolean][] = [
  ['src/client/index.ts bundled by esbuild', SOURCE_ENTRY, true],
  [
    `the built packages/client/dist/src/client/index.js${builtIsFresh ? '' : ' (skipped: missing or older than the sources; run npm run build)'}`,
    BUILT_ENTRY,
    builtIsFresh,
  ],
];

describe.each(entries)('grantd/client from %s', (_, entry, available) => {
  let code = '';
  let metafile: Metafile;
  let tenant: TestTenant;

  beforeAll(async () => {
    if (!available) return;
    ({ code, metafile } = await bundle(entry));
    tenant = await newTenant(server.services);
  });

  /** A fresh Edge Runtime VM with the bundle loaded; `grantdClient` is the module's exports. */
  const edge = () => {
    const vm = new EdgeVM();
    vm.evaluate(code);
    return vm;
  };

  /** Runs an async function body inside the VM and returns its JSON-serialisable result. */
  const run = async (vm: EdgeVM, body: string, values: Record<string, unknown>) => {
    const args = Object.entries(values)
      .map(([k, v]) => `const ${k} = ${JSON.stringify(v)};`)
      .join('\n');
    const out: string = await vm.evaluate(
      `(async () => { ${args}\n const result = await (async () => { ${body} })(); return JSON.stringify(result); })()`,
    );
    return JSON.parse(out);
  };

  it.skipIf(!available)('pulls in no Node built-in and nothing external', () => {
    const imports = importsOf(metafile);
    expect(imports.filter((i) => i.external === true || NODE_BUILTINS.has(i.path) || i.path.startsWith('node:'))).toEqual([]);
    const inputs = Object.keys(metafile.inputs).map((p) => relative(ROOT, join(ROOT, p)));
    // Only the client, the contract, zod and @ts-rest/core: nothing of the server.
    expect(inputs.filter((p) => !/^((packages\/client\/dist\/)?(src\/client|contract)|node_modules\/(zod|@ts-rest\/core))\//.test(p))).toEqual([]);
    expect(inputs.some((p) => /contract\/index\.(ts|js)$/.test(p))).toBe(true);
    expect(code).not.toMatch(/\b__require\b|\brequire\(/);
  });

  it.skipIf(!available)('runs in the Edge Runtime and makes real calls: namespaces, grants.create, check, objects.list', async () => {
    const vm = edge();
    expect(vm.evaluate('[typeof EdgeRuntime, typeof process, typeof Buffer, typeof require]')).toEqual([
      'string',
      'undefined',
      'undefined',
      'undefined',
    ]);
    const result = await run(
      vm,
      `
      const client = grantdClient.createClient({ apiKey, baseUrl });
      const namespace = await client.namespaces.create(DOCUMENT_NAMESPACE);
      const before = await client.check({ subject: 'user:edge', relation: 'viewer', object: 'document:e1' });
      const grants = [];
      for (const id of ['e1', 'e2', 'e3']) grants.push(await client.grants.create({ subject: 'user:edge', relation: 'owner', object: 'document:' + id }));
      const after = await client.check({ subject: 'user:edge', relation: 'viewer', object: 'document:e1' });
      const page = await client.objects.list({ namespace: 'document', subject: 'user:edge', relation: 'viewer', limit: 2 });
      const all = [];
      for await (const id of client.objects.iterate({ namespace: 'document', subject: 'user:edge', relation: 'viewer', limit: 2 })) all.push(id);
      let problem;
      try {
        await client.check({ subject: 'user:edge', relation: 'viewer', object: 'nowhere:x' });
      } catch (e) {
        problem = { problem: e instanceof grantdClient.ProblemError, service: e instanceof grantdClient.ServiceError, type: e.type, status: e.status };
      }
      return { namespace: namespace.name, before, grants, after, page, all, problem };
      `,
      { apiKey: tenant.adminKey, baseUrl: server.url, DOCUMENT_NAMESPACE },
    );
    expect(result.namespace).toBe('document');
    expect(result.before).toEqual({ allowed: false });
    expect(result.grants[0]).toEqual({
      subject: 'user:edge',
      relation: 'owner',
      object: 'document:e1',
      created_at: expect.any(String),
      not_before: null,
      expires_at: null,
      revision: expect.any(String),
    });
    expect(result.after).toEqual({ allowed: true });
    expect(result.page).toEqual({ namespace: 'document', objects: ['e1', 'e2'], next_cursor: expect.any(String) });
    expect(result.all).toEqual(['e1', 'e2', 'e3']);
    expect(result.problem).toEqual({ problem: true, service: true, type: 'namespace-not-found', status: 404 });
  });

  it.skipIf(!available)('retries and times out with the Edge Runtime timers and AbortController', async () => {
    const vm = edge();
    faults.reply((_req, res, { n }) => (n === 1 ? problem(res, 503, 'unavailable', { 'retry-after': '0' }) : json(res, 200, { allowed: true })));
    const retried = await run(vm, `return grantdClient.createClient({ apiKey: 'k', baseUrl }).check(CHECK);`, {
      baseUrl: faults.url,
      CHECK: { subject: 'user:a', relation: 'viewer', object: 'document:b' },
    });
    expect(retried).toEqual({ allowed: true });
    expect(faults.attempts).toHaveLength(2);

    faults.reply(() => undefined); // never answers
    const timedOut = await run(
      vm,
      `
      try {
        await grantdClient.createClient({ apiKey: 'k', baseUrl }).check(CHECK, { timeoutMs: 150 });
      } catch (e) {
        return { name: e.name, type: e.type, status: e.status, timeout: e instanceof grantdClient.TimeoutError, service: e instanceof grantdClient.ServiceError, timeoutMs: e.timeoutMs };
      }
      `,
      { baseUrl: faults.url, CHECK: { subject: 'user:a', relation: 'viewer', object: 'document:b' } },
    );
    // The call's own budget ran out (150 ms), not the client's default (5 s): how long that took is the machine's.
    expect(timedOut).toMatchObject({ name: 'TimeoutError', type: 'timeout', status: 0, timeout: true, service: true, timeoutMs: 150 });
  });
});

describe('src/client uses no Node-only API', () => {
  const files = readdirSync(join(ROOT, 'src', 'client'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));

  it.each(files)('%s', (file) => {
    // The code without its comments (whose examples may show Node usage).
    const text = readFileSync(join(ROOT, 'src', 'client', file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|\s)\/\/.*$/gm, '$1');
    const imports = [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
    for (const path of imports) {
      expect(path.startsWith('node:') || NODE_BUILTINS.has(path), path).toBe(false);
      // The client may use the contract and its own modules, zod and @ts-rest/core: nothing of the server.
      expect(/^(\.\/|\.\.\/\.\.\/contract\/|zod$|@ts-rest\/core$)/.test(path), path).toBe(true);
    }
    expect(text).not.toMatch(/\b(Buffer|process|require|__dirname|setImmediate)\b/);
  });
});
