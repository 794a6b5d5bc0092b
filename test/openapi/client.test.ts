import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/package-root.ts';
import { listen, newTenant, uniqueName, useApp, type TestTenant } from '../helpers.ts';
import { grantdClient, walkthrough } from './walkthrough.ts';

// The walk-through of walkthrough.ts, whose client is openapi-fetch typed by openapi-typescript's
// types of generated/openapi.json (generated/openapi-types.ts, checked fresh by document.test.ts).

const { services, app } = useApp();
let tenant: TestTenant;
let server: Awaited<ReturnType<typeof listen>>;

beforeAll(async () => {
  tenant = await newTenant(services);
  server = await listen(app);
});

afterAll(async () => {
  await server?.close();
});

describe('a client generated from generated/openapi.json', () => {
  it('typechecks against the generated types, which are strict enough to reject misuse', () => {
    const root = packageRoot();
    const parsed = ts.getParsedCommandLineOfConfigFile(
      join(root, 'tsconfig.json'),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      },
    );
    const program = ts.createProgram({ rootNames: [join(root, 'test', 'openapi', 'walkthrough.ts')], options: { ...parsed!.options, noEmit: true } });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    expect(diagnostics).toEqual([]);
    expect(program.getSourceFiles().map((f) => f.fileName)).toContain(join(root, 'generated', 'openapi-types.ts'));
  }, 60_000);

  it('creates a namespace, grants, checks, pages through objects and gets a problem', async () => {
    const namespace = uniqueName('doc').replace(/-/g, '_');
    const result = await walkthrough(grantdClient(server.baseUrl, tenant.adminKey), namespace);

    expect(result.namespace).toEqual({
      name: namespace,
      relations: { parent: {}, owner: {}, editor: { includes: ['owner'] }, viewer: { includes: ['editor', 'parent->viewer'] } },
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
    });
    expect(result.grantStatus).toBe(201);
    expect(result.grant).toMatchObject({ subject: 'user:alice', relation: 'owner', object: `${namespace}:q3` });
    expect(result.aliceViews).toBe(true);
    expect(result.bobViews).toBe(false);
    expect(result.pages).toEqual([['q1'], ['q2'], ['q3']]);
    expect(result.cursors).toEqual([expect.any(String), expect.any(String), null]);
    expect(result.problem.status).toBe(400);
    expect(result.problem.contentType).toMatch(/^application\/problem\+json/);
    expect(result.problem.body).toMatchObject({ type: 'invalid-subject', status: 400, title: expect.any(String), detail: expect.any(String) });
    expect(result.missingNamespace).toEqual({ status: 404, type: 'namespace-not-found' });
    expect(result.key).toMatchObject({ label: 'walkthrough', scopes: ['check:read'], secret: expect.stringMatching(/^svc_live_/) });
  });
});
