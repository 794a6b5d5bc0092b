import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { createClient as generateHeyApiClient } from '@hey-api/openapi-ts';
import openapiTS from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { listen, newTenant, uniqueName, useApp, type TestTenant } from '../helpers.ts';
import { loadDocument, OPENAPI_FILE } from './support.ts';

// Third-party generators take generated/openapi.json without a warning, and the clients they make
// call a real server: openapi-typescript (whose types and openapi-fetch client client.test.ts runs),
// @hey-api/openapi-ts, and Perl's OpenAPI::Client (Debian's libopenapi-client-perl, which .ci/run
// installs), whose regular expressions are Perl's rather than ECMA-262's.

const { services, app } = useApp();
let tenant: TestTenant;
let server: Awaited<ReturnType<typeof listen>>;
let workdir: string;
const run = promisify(execFile);

beforeAll(async () => {
  tenant = await newTenant(services);
  server = await listen(app);
  workdir = mkdtempSync(join(tmpdir(), 'grantd-generators-'));
});

afterAll(async () => {
  await server?.close();
  if (workdir) rmSync(workdir, { recursive: true, force: true });
});

/** What a generator writes to the console: its complaints (warn, error) and its progress (log, info). */
let complaints: unknown[][];
let progress: string[];
beforeEach(() => {
  complaints = [];
  progress = [];
  for (const channel of ['warn', 'error'] as const) vi.spyOn(console, channel).mockImplementation((...args) => void complaints.push(args));
  for (const channel of ['log', 'info'] as const) vi.spyOn(console, channel).mockImplementation((...args) => void progress.push(args.join(' ')));
});
afterEach(() => vi.restoreAllMocks());

const namespaceName = () => uniqueName('gen').replace(/-/g, '_');

describe('openapi-typescript', () => {
  it('generates types without a warning', async () => {
    await openapiTS(structuredClone(loadDocument()) as Parameters<typeof openapiTS>[0], { silent: false });
    expect(complaints).toEqual([]);
  });
});

/** The @hey-api/openapi-ts program: its SDK functions, one per operation id, against a real server. */
const HEY_API_PROGRAM = `
import { agentsGet, check, grantsCreate, namespacesCreate, objectsList } from './hey/index.js';
import { client } from './hey/client.gen.js';

export async function run(baseUrl: string, apiKey: string, namespace: string) {
  client.setConfig({ baseUrl, auth: () => apiKey });
  const object = namespace + ':q3';
  const created = await namespacesCreate({ body: { name: namespace, relations: { owner: {}, viewer: { includes: ['owner'] } } } });
  const grant = await grantsCreate({ body: { subject: 'user:alice', relation: 'owner', object } });
  const alice = await check({ body: { subject: 'user:alice', relation: 'viewer', object } });
  const objects = await objectsList({ query: { namespace, subject: 'user:alice', relation: 'viewer', limit: 10 } });
  const missing = await agentsGet({ path: { external_id: 'nobody' } });
  const allowed: boolean | undefined = alice.data?.allowed;
  return {
    namespace: created.data?.name,
    grant: grant.response.status,
    allowed,
    objects: objects.data?.objects,
    missing: { status: missing.response.status, type: missing.error?.type },
  };
}
`;

describe('@hey-api/openapi-ts', () => {
  it('generates a fetch client without a warning; it type-checks and calls a real server', async () => {
    const output = join(workdir, 'hey');
    await generateHeyApiClient({
      input: OPENAPI_FILE,
      output: { path: output },
      plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
      logs: { level: 'warn', file: false },
    });
    expect(complaints).toEqual([]);
    expect(progress.filter((line) => /warn|⚠/i.test(line))).toEqual([]);

    const program = join(workdir, 'program.ts');
    writeFileSync(program, HEY_API_PROGRAM);
    const compiled = ts.createProgram({
      rootNames: [program],
      options: {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
        types: [],
        strict: true,
        outDir: join(workdir, 'out'),
      },
    });
    const diagnostics = ts.getPreEmitDiagnostics(compiled).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
    compiled.emit();

    const { run: call } = (await import(pathToFileURL(join(workdir, 'out', 'program.js')).href)) as {
      run: (baseUrl: string, apiKey: string, namespace: string) => Promise<unknown>;
    };
    const namespace = namespaceName();
    expect(await call(server.baseUrl, tenant.adminKey, namespace)).toEqual({
      namespace,
      grant: 201,
      allowed: true,
      objects: ['q3'],
      missing: { status: 404, type: 'agent-not-found' },
    });
  }, 120_000);
});

describe("Perl's OpenAPI::Client", () => {
  it('loads the document and validates requests by it without a warning, and calls a real server', async () => {
    const namespace = namespaceName();
    const script = join(import.meta.dirname, 'perl-client.pl');
    const { stdout, stderr } = await run('perl', [script, OPENAPI_FILE, server.baseUrl, tenant.adminKey, namespace]).catch(
      (error: { stderr?: string }) => {
        if (error.stderr?.includes("Can't locate OpenAPI/Client.pm"))
          throw new Error("Perl's OpenAPI::Client is missing: apt-get install libopenapi-client-perl");
        throw error;
      },
    );
    expect(stderr).toBe('');
    const result = JSON.parse(stdout) as Record<string, { status: number; reached: boolean; body: Record<string, unknown> }> & { warnings: string[] };
    expect(result.warnings).toEqual([]);
    const object = `${namespace}:q3`;
    expect(result.namespace).toMatchObject({ status: 201, reached: true, body: { name: namespace } });
    expect(result.grant).toMatchObject({ status: 201, body: { subject: 'user:alice', relation: 'owner', object } });
    expect(result.alice).toEqual({ status: 200, reached: true, body: { allowed: true } });
    expect(result.bob).toEqual({ status: 200, reached: true, body: { allowed: false } });
    expect(result.objects).toMatchObject({ status: 200, body: { namespace, objects: ['q3'], next_cursor: null } });
    expect(result.agent).toMatchObject({ status: 201, body: { external_id: 'perl-bot', display_name: 'Perl bot' } });
    expect(result.fetched).toMatchObject({ status: 200, body: { external_id: 'perl-bot', subject: 'agent:perl-bot' } });
    expect(result.key).toMatchObject({ status: 201, body: { label: 'perl', scopes: ['check:read'] } });
    expect(result.unknown).toMatchObject({ status: 404, reached: true, body: { type: 'namespace-not-found', status: 404 } });
    // Refused by the document's subject pattern, as Perl compiles it, before it is sent.
    expect(result.malformed).toMatchObject({ status: 400, reached: false });
  }, 60_000);
});
