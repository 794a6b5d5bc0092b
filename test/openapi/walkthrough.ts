import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from '../../generated/openapi-types.ts';

// A client made of nothing but generated/openapi.json: openapi-typescript's types of it
// (generated/openapi-types.ts) and openapi-fetch. client.test.ts typechecks this file with the
// TypeScript compiler and runs the walk-through against a real server.

export type GrantdClient = Client<paths>;
type Schemas = components['schemas'];

export const grantdClient = (baseUrl: string, apiKey: string): GrantdClient =>
  createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });

export interface WalkthroughResult {
  namespace: Schemas['Namespace'];
  grant: Schemas['Grant'];
  grantStatus: number;
  aliceViews: boolean;
  bobViews: boolean;
  pages: string[][];
  cursors: (string | null)[];
  problem: { status: number; contentType: string | null; body: Schemas['Problem'] };
  missingNamespace: { status: number; type: Schemas['Problem']['type'] };
  key: Schemas['CreatedKey'];
}

const fail = (what: string, response: { status: number }, error: unknown): never => {
  throw new Error(`${what}: ${response.status} ${JSON.stringify(error)}`);
};

/** Create a namespace, grant, check, list objects a page at a time, and meet a problem. */
export async function walkthrough(client: GrantdClient, namespaceName: string): Promise<WalkthroughResult> {
  const created = await client.POST('/v1/namespaces', {
    body: {
      name: namespaceName,
      relations: { parent: {}, owner: {}, editor: { includes: ['owner'] }, viewer: { includes: ['editor', 'parent->viewer'] } },
    },
  });
  const namespace = created.data ?? fail('namespacesCreate', created.response, created.error);

  let grant: Schemas['Grant'] | undefined;
  let grantStatus = 0;
  for (const id of ['q1', 'q2', 'q3']) {
    const res = await client.POST('/v1/grants', { body: { subject: 'user:alice', relation: 'owner', object: `${namespaceName}:${id}` } });
    grant = res.data ?? fail('grantsCreate', res.response, res.error);
    grantStatus = res.response.status;
  }

  const check = async (subject: string): Promise<boolean> => {
    const res = await client.POST('/v1/check', { body: { subject, relation: 'viewer', object: `${namespaceName}:q1` } });
    return (res.data ?? fail('check', res.response, res.error)).allowed;
  };
  const aliceViews = await check('user:alice');
  const bobViews = await check('user:bob');

  const pages: string[][] = [];
  const cursors: (string | null)[] = [];
  let cursor: string | undefined;
  do {
    const res = await client.GET('/v1/objects', {
      params: { query: { namespace: namespaceName, subject: 'user:alice', relation: 'viewer', limit: 1, ...(cursor ? { cursor } : {}) } },
    });
    const page: Schemas['ObjectPage'] = res.data ?? fail('objectsList', res.response, res.error);
    pages.push(page.objects);
    cursors.push(page.next_cursor);
    cursor = page.next_cursor ?? undefined;
  } while (cursor && pages.length < 10);

  const bad = await client.POST('/v1/check', { body: { subject: 'alice', relation: 'viewer', object: `${namespaceName}:q1` } });
  if (bad.data !== undefined || bad.response.status !== 400) throw new Error(`a malformed subject was answered ${bad.response.status}`);
  const problem = {
    status: bad.response.status,
    contentType: bad.response.headers.get('content-type'),
    body: bad.error as Schemas['Problem'],
  };

  const missing = await client.GET('/v1/objects', { params: { query: { namespace: 'nothing_here', subject: 'user:alice', relation: 'viewer' } } });
  if (missing.response.status !== 404 || !missing.error) throw new Error(`an unknown namespace was answered ${missing.response.status}`);
  const missingNamespace = { status: missing.response.status, type: (missing.error as Schemas['Problem']).type };

  const keyResponse = await client.POST('/v1/keys', { body: { label: 'walkthrough' } });
  const key = keyResponse.data ?? fail('keysCreate', keyResponse.response, keyResponse.error);

  return { namespace, grant: grant!, grantStatus, aliceViews, bobViews, pages, cursors, problem, missingNamespace, key };
}

/** Never called: each line must fail to typecheck, or the generated types are too loose. */
export function misuses(client: GrantdClient): void {
  // @ts-expect-error there is no such path
  void client.GET('/v1/nothing');
  // @ts-expect-error a check needs a relation
  void client.POST('/v1/check', { body: { subject: 'user:alice', object: 'document:q1' } });
  // @ts-expect-error a relation is a string
  void client.POST('/v1/check', { body: { subject: 'user:alice', relation: 7, object: 'document:q1' } });
  // @ts-expect-error limit is a number
  void client.GET('/v1/objects', { params: { query: { namespace: 'document', subject: 'user:alice', relation: 'viewer', limit: 'ten' } } });
  // @ts-expect-error objects needs a namespace
  void client.GET('/v1/objects', { params: { query: { subject: 'user:alice', relation: 'viewer' } } });
  // @ts-expect-error key scopes are an enum
  void client.POST('/v1/keys', { body: { scopes: ['root'] } });
  // @ts-expect-error an agent is fetched by its external_id
  void client.GET('/v1/agents/{external_id}', { params: { path: {} } });
  // @ts-expect-error GET /v1/check does not exist
  void client.GET('/v1/check');
}

/** Never called: the generated response types carry the documented fields and problem types. */
export async function typedResults(client: GrantdClient): Promise<void> {
  const res = await client.GET('/v1/agents/{external_id}', { params: { path: { external_id: 'bot' } } });
  if (res.data) {
    const owner: string | null = res.data.owner;
    const scope: string[] = res.data.scope;
    void owner;
    void scope;
  }
  if (res.error) {
    const type:
      | 'invalid-request'
      | 'invalid-revision'
      | 'agent-not-found'
      | 'unauthenticated'
      | 'insufficient-scope'
      | 'rate-limited'
      | 'internal'
      | 'unavailable' = res.error.type;
    void type;
  }
  const page = await client.GET('/v1/grants', { params: { query: { limit: 5 } } });
  const next: string | null | undefined = page.data?.next_cursor;
  void next;
}
