import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { client, DOCUMENT_NAMESPACE, listen, newTenant, useServices, type TestTenant } from '../helpers.ts';

/** POST /mcp through the SDK's own client, over a real socket (docs/mcp.md). */
const services = useServices();
let baseUrl = '';
let close: () => Promise<void>;
let tenantA: TestTenant;
const connected: Client[] = [];

beforeAll(async () => {
  const app = createApp(services);
  ({ baseUrl, close } = await listen(app));
  tenantA = await newTenant(services);
  await client(app, tenantA.adminKey).post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
});
afterAll(async () => {
  await Promise.all(connected.map((c) => c.close()));
  await close();
});

/** An MCP client of grantd signed in with `key`, as an MCP host configured with an API key header would be. */
async function connect(key: string): Promise<Client> {
  const mcp = new Client({ name: 'grantd-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await mcp.connect(transport);
  connected.push(mcp);
  return mcp;
}

/** A tool's answer as the caller reads it: its structured content, which its text repeats. */
async function call(mcp: Client, name: string, args: Record<string, unknown> = {}) {
  const result = await mcp.callTool({ name, arguments: args });
  const [text] = result.content as { type: string; text: string }[];
  return { isError: result.isError === true, structured: result.structuredContent, json: JSON.parse(text!.text) as Record<string, unknown> };
}

const grant = { subject: 'user:alice', relation: 'editor', object: 'document:plan' };

describe('POST /mcp', () => {
  it('lists the eight tools, each with a JSON Schema of its arguments from the contract', async () => {
    const { tools } = await (await connect(tenantA.adminKey)).listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      ['check', 'check_bulk', 'explain', 'list_grants', 'list_namespaces', 'list_objects', 'list_subjects', 'write_grants'].sort(),
    );
    for (const tool of tools) expect(tool.inputSchema.type, tool.name).toBe('object');
    const byName = new Map(tools.map((t) => [t.name, t]));
    // write_grants takes POST /v1/grants/batch's body; list_objects GET /v1/objects's query.
    expect(Object.keys(byName.get('write_grants')!.inputSchema.properties!).sort()).toEqual(['deletes', 'writes']);
    expect(byName.get('list_objects')!.inputSchema.required).toEqual(['namespace', 'subject', 'relation']);
    expect(byName.get('check')!.inputSchema).toMatchObject({ additionalProperties: false, required: ['subject', 'relation', 'object'] });
    expect(byName.get('check')!.outputSchema).toMatchObject({ properties: { allowed: { type: 'boolean' } } });
  });

  it('writes grants, then checks and lists them as /v1 answers', async () => {
    const mcp = await connect(tenantA.adminKey);
    const written = await call(mcp, 'write_grants', { writes: [grant, { ...grant, object: 'document:memo' }] });
    expect(written).toMatchObject({ isError: false, structured: { written: 2, deleted: 0 } });
    expect(written.json).toEqual(written.structured);

    expect((await call(mcp, 'check', grant)).structured).toEqual({ allowed: true });
    // viewer includes editor (the document namespace's definition): the engine's path, not a lookup.
    expect((await call(mcp, 'check', { ...grant, relation: 'viewer' })).structured).toEqual({ allowed: true });
    expect((await call(mcp, 'check', { ...grant, subject: 'user:bob' })).structured).toEqual({ allowed: false });
    const listed = await call(mcp, 'list_objects', { namespace: 'document', subject: 'user:alice', relation: 'viewer', limit: 1 });
    expect(listed.structured).toMatchObject({ namespace: 'document', objects: ['memo'], next_cursor: expect.any(String) });
    const next = await call(mcp, 'list_objects', {
      namespace: 'document',
      subject: 'user:alice',
      relation: 'viewer',
      cursor: (listed.structured as { next_cursor: string }).next_cursor,
    });
    expect(next.structured).toEqual({ namespace: 'document', objects: ['plan'], next_cursor: null });

    expect((await call(mcp, 'list_subjects', { object: 'document:plan', relation: 'viewer', subject_namespace: 'user' })).structured).toMatchObject({
      subjects: ['user:alice'],
    });
    expect((await call(mcp, 'explain', grant)).structured).toMatchObject({ allowed: true, reason: null });
    expect((await call(mcp, 'check_bulk', { checks: [grant, { ...grant, relation: 'owner' }] })).structured).toEqual({
      results: [{ allowed: true }, { allowed: false }],
    });
    expect((await call(mcp, 'list_grants', { object: 'document:plan' })).structured).toMatchObject({ grants: [grant], next_cursor: null });
    const namespaces = (await call(mcp, 'list_namespaces')).structured as { namespaces: { name: string }[] };
    expect(namespaces.namespaces.map((n) => n.name)).toEqual(['agent', 'document', 'user']);

    const deleted = await call(mcp, 'write_grants', { deletes: [{ ...grant, object: 'document:memo' }] });
    expect(deleted.structured).toEqual({ written: 0, deleted: 1 });
    expect((await call(mcp, 'check', { ...grant, object: 'document:memo' })).structured).toEqual({ allowed: false });
  });

  it("answers a problem as a tool error naming its type, title and detail, as /v1's", async () => {
    const mcp = await connect(tenantA.adminKey);
    const unknown = await call(mcp, 'check', { ...grant, object: 'folder:x' });
    expect(unknown).toMatchObject({
      isError: true,
      json: { type: 'namespace-not-found', title: 'Namespace not found', status: 404, detail: expect.stringContaining('folder') },
    });
    expect(unknown.structured).toBeUndefined();
    // The contract's schema refuses it as POST /v1/grants/batch would, naming the item.
    expect(await call(mcp, 'write_grants', { writes: [{ ...grant, object: 'plan' }] })).toMatchObject({
      isError: true,
      json: { type: 'invalid-object', title: expect.any(String), detail: expect.stringMatching(/^writes\[0\]\.object: /) },
    });
    expect(await call(mcp, 'write_grants', {})).toMatchObject({ isError: true, json: { type: 'invalid-request' } });
    expect(await call(mcp, 'list_grants', { limit: 0 })).toMatchObject({ isError: true, json: { type: 'invalid-request' } });
  });

  it('refuses a tool call whose scope the key lacks with the 403 /v1 gives, not a tool error', async () => {
    const reader = await connect(await tenantA.keyWith('check:read'));
    expect((await call(reader, 'check', grant)).structured).toEqual({ allowed: true });
    const refused = await reader.callTool({ name: 'write_grants', arguments: { writes: [grant] } }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(403);

    const raw = await post(await tenantA.keyWith('check:read'), {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'list_grants', arguments: {} },
    });
    expect(raw.status).toBe(403);
    expect(raw.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await raw.json()).toEqual({
      type: 'insufficient-scope',
      title: 'Insufficient scope',
      status: 403,
      detail: 'this operation needs a key with scope grant:read',
    });
  });

  it('is authenticated as /v1 is: no key, or an unknown one, is 401', async () => {
    const message = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const none = await fetch(`${baseUrl}/mcp`, { method: 'POST', headers: MCP_HEADERS, body: JSON.stringify(message) });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await post('gd_live_not_a_key_at_all_0000000000000000', message)).status).toBe(401);
  });

  it("keeps tenants apart: tenant B's key sees nothing of A's and writes only in B", async () => {
    const a = await connect(tenantA.adminKey);
    await call(a, 'write_grants', { writes: [{ subject: 'user:carol', relation: 'owner', object: 'document:secret' }] });
    const tenantB = await newTenant(services);
    const b = await connect(tenantB.adminKey);
    expect(await call(b, 'check', { subject: 'user:carol', relation: 'owner', object: 'document:secret' })).toMatchObject({
      isError: true,
      json: { type: 'namespace-not-found' },
    });
    expect((await call(b, 'list_grants')).structured).toEqual({ grants: [], next_cursor: null });
    expect(((await call(b, 'list_namespaces')).structured as { namespaces: { name: string }[] }).namespaces.map((n) => n.name)).toEqual([
      'agent',
      'user',
    ]);
    expect((await call(b, 'write_grants', { writes: [{ subject: 'user:carol', relation: 'owner', object: 'user:x' }] })).structured).toEqual({
      written: 1,
      deleted: 0,
    });
    expect((await call(a, 'list_grants', { object: 'user:x' })).structured).toEqual({ grants: [], next_cursor: null });
  });

  it('answers GET (and any method but POST) 405 with Allow: POST', async () => {
    for (const method of ['GET', 'DELETE', 'PUT']) {
      const res = await fetch(`${baseUrl}/mcp`, { method, headers: { Authorization: `Bearer ${tenantA.adminKey}`, accept: 'text/event-stream' } });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow'), method).toBe('POST');
    }
  });

  it('answers a tool call with no session opened first (stateless), as JSON', async () => {
    const res = await post(tenantA.adminKey, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'check', arguments: grant } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('mcp-session-id')).toBeNull();
    expect(await res.json()).toMatchObject({ jsonrpc: '2.0', id: 7, result: { structuredContent: { allowed: true } } });
  });

  it("makes no JSON Schema validator per request: each request's server shares the endpoint's (issue 40: a millisecond and more of the event loop each)", async () => {
    // The SDK's server makes an Ajv instance of its own unless given one; an instance adds its meta-schema as it is made.
    const made = vi.spyOn(Ajv.prototype as unknown as { _addDefaultMetaSchema(): void }, '_addDefaultMetaSchema');
    try {
      for (let i = 0; i < 3; i++) {
        const res = await post(tenantA.adminKey, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'check', arguments: grant } });
        expect(res.status).toBe(200);
      }
      expect(made).not.toHaveBeenCalled();
    } finally {
      made.mockRestore();
    }
  });

  it('takes one message a request, not a batch', async () => {
    const res = await post(tenantA.adminKey, [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
  });
});

const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

const post = (key: string, message: unknown) =>
  fetch(`${baseUrl}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, Authorization: `Bearer ${key}` }, body: JSON.stringify(message) });
