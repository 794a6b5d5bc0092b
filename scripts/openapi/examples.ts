import type { ExampleObject, MediaTypeObject } from 'openapi3-ts/oas30';
import { DOCUMENT_NAMESPACE_EXAMPLE } from '../../contract/examples.ts';
import type { KeyScope, Problem, ProblemType } from '../../contract/index.ts';
import { missingScopeDetail } from '../../src/auth/scopes.ts';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { overBudget } from '../../src/engine/budget.ts';
import { problemBody } from '../../src/http/problem.ts';
import type { Json } from './json.ts';

/*
 * Examples of request bodies, success responses and problems, by operation.
 */

/** A realistic problem of each type, worded as the server words it; `insufficient-scope` names the operation's scope. */
export const problemExample = (type: ProblemType, scope: KeyScope | undefined): Problem =>
  type === 'insufficient-scope' && scope ? problemBody(type, missingScopeDetail(scope)) : PROBLEM_EXAMPLE[type];

const PROBLEM_EXAMPLE: Record<ProblemType, Problem> = {
  'invalid-request': problemBody('invalid-request', 'body.relation: Required', [{ path: 'body.relation', message: 'Required' }]),
  'invalid-subject': problemBody('invalid-subject', 'body.subject: must be <namespace>:<id>, e.g. user:alice', [
    { path: 'body.subject', message: 'must be <namespace>:<id>, e.g. user:alice' },
  ]),
  'invalid-object': problemBody('invalid-object', 'body.object: must be <namespace>:<id>, e.g. user:alice', [
    { path: 'body.object', message: 'must be <namespace>:<id>, e.g. user:alice' },
  ]),
  'unknown-relation': problemBody(
    'unknown-relation',
    'namespace document declares no relation veiwer (did you mean viewer?); it declares editor, owner, parent, viewer',
  ),
  'invalid-namespace': problemBody('invalid-namespace', 'relation viewer includes "parent->viewer", but parent is not declared'),
  'invalid-cursor': problemBody('invalid-cursor', 'the cursor was not issued for this query'),
  'invalid-revision': problemBody('invalid-revision', 'header.Grantd-Consistency: the revision was not issued by this server for this tenant', [
    { path: 'header.Grantd-Consistency', message: 'the revision was not issued by this server for this tenant' },
  ]),
  'changes-expired': problemBody('changes-expired', 'the changes after this revision are no longer kept; read the feed again from its start'),
  unauthenticated: problemBody('unauthenticated', 'send an API key or access token as Authorization: Bearer <secret>'),
  'insufficient-scope': problemBody('insufficient-scope', missingScopeDetail('admin')),
  'not-found': problemBody('not-found', 'no route GET /v1/nothing'),
  'namespace-not-found': problemBody('namespace-not-found', 'namespace invoice does not exist'),
  'agent-not-found': problemBody('agent-not-found', 'agent release-bot is not registered'),
  'key-not-found': problemBody('key-not-found', 'no live key key_4Vq8ZrT1mX'),
  'client-not-found': problemBody('client-not-found', 'no OAuth client oc_4Vq8ZrT1mXa2Bc3De4Fg'),
  'method-not-allowed': problemBody('method-not-allowed', 'PUT is not allowed on /v1/grants; it takes DELETE, GET, HEAD, POST'),
  'namespace-exists': problemBody('namespace-exists', 'namespace document already exists'),
  'namespace-in-use': problemBody(
    'namespace-in-use',
    'namespace document would no longer declare relations that grants use: approver (3 grants); declare them, or revoke those grants first',
  ),
  'agent-exists': problemBody('agent-exists', 'agent release-bot already exists'),
  'payload-too-large': problemBody('payload-too-large', 'the body is larger than 1 MiB'),
  'unsupported-media-type': problemBody('unsupported-media-type', 'send the body as application/json'),
  'check-too-complex': problemBody('check-too-complex', overBudget(DEFAULT_CONFIG.GRANTD_CHECK_BUDGET).detail),
  'rate-limited': problemBody('rate-limited', 'this key is limited to 100 requests a second; retry in 1 s'),
  internal: problemBody('internal', 'an internal error occurred; quote request id 1f0c6a52-3b7e-4c59-9a43-5d2f0e8b7c11 when reporting it'),
  unavailable: problemBody('unavailable', 'the database is unreachable; retry shortly'),
};

// Example values, from docs/api.md#endpoints.
const CREATED_AT = '2025-03-14T09:26:53.589Z';
const UPDATED_AT = '2025-03-15T11:02:17.204Z';
const OBJECTS_CURSOR = 'WyJxMyJd.n3QqM0vJ8f5xYx8s0Rk7Lw';
const SUBJECTS_CURSOR = 'WyJib2IiXQ.Xk2v9QmL0pR7sT4wYb1c8A';
const REVISION = 'WyI3NDIxIiwiOTIyMzM3MjAzNjg1NDc3NTgwNyJd.q8Jm2Xc0Lr5Tz7Wv1Nb4Ag';
const NEXT_REVISION = 'WyI3NDMwIiwiOTIyMzM3MjAzNjg1NDc3NTgwNyJd.Zt3Kp9Qs2Vx6Ye0Hu8Rc1w';
const AGENT = {
  external_id: 'release-bot',
  subject: 'agent:release-bot',
  display_name: 'Release bot',
  owner: 'user:alice',
  scope: ['document:viewer'],
  created_at: CREATED_AT,
};
const SECRET = 'svc_live_7Hq2Lm9XbV3kTz8RpW4nYc6DfJ1sGa5QeUo0iZyK';
const CREATED_KEY = {
  id: 'key_4Vq8ZrT1mX',
  prefix: SECRET.slice(0, 17),
  secret: SECRET,
  label: 'ci',
  scopes: ['check:read', 'grant:read'],
  created_at: CREATED_AT,
};

const OAUTH_CLIENT = {
  client_id: 'oc_4Vq8ZrT1mXa2Bc3De4Fg',
  name: 'Release bot',
  type: 'confidential',
  redirect_uris: [],
  scopes: ['check:read'],
  agent: 'release-bot',
  registered: 'admin',
  created_at: CREATED_AT,
};

export const ACCESS_TOKEN = 'svc_at_mF3xQ9vR2kLp7TzW8nYc4DjH6sGa1QeUo5iZyKb0AXw';

const single = (value: Json): MediaTypeObject => ({ example: value });
const named = (examples: Record<string, { summary: string; value: Json }>): MediaTypeObject => ({
  examples: Object.fromEntries(Object.entries(examples).map(([k, v]) => [k, v satisfies ExampleObject])),
});

/** Examples of request bodies and success responses, by operation id ("request" or the status). */
export const EXAMPLES: Record<string, Record<string, MediaTypeObject>> = {
  check: {
    request: single({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' }),
    200: single({ allowed: true }),
  },
  checkBulk: {
    request: single({
      checks: [
        { subject: 'user:alice', relation: 'viewer', object: 'document:q3' },
        { subject: 'agent:release-bot', relation: 'editor', object: 'document:q3' },
        { subject: 'user:alice', relation: 'viewer', object: 'invoice:7' },
      ],
    }),
    200: single({
      results: [
        { allowed: true },
        { allowed: false },
        { allowed: false, error: { type: 'namespace-not-found', detail: 'namespace invoice does not exist' } },
      ],
    }),
  },
  explain: {
    request: single({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' }),
    200: named({
      allowed: {
        summary: "Allowed: alice is a member of a group that views the document's folder",
        value: {
          allowed: true,
          path: [
            { subject: 'user:alice', relation: 'member', object: 'group:eng', via: 'member' },
            { subject: 'group:eng', relation: 'viewer', object: 'folder:f1', via: 'direct' },
            { subject: 'folder:f1', relation: 'parent', object: 'document:q3', via: 'arrow:parent->viewer' },
          ],
          reason: null,
        },
      },
      denied: { summary: "Denied: the agent's scope does not cover the relation", value: { allowed: false, path: [], reason: 'agent-scope' } },
    }),
  },
  subjectsList: {
    200: named({
      more: {
        summary: 'A page with more to come (limit=2)',
        value: { object: 'document:q3', relation: 'viewer', subjects: ['user:alice', 'user:bob'], next_cursor: SUBJECTS_CURSOR },
      },
      last: { summary: 'The last page', value: { object: 'document:q3', relation: 'viewer', subjects: ['user:carol'], next_cursor: null } },
    }),
  },
  objectsList: {
    200: named({
      more: {
        summary: 'A page with more to come (limit=2)',
        value: { namespace: 'document', objects: ['q3', 'roadmap'], next_cursor: OBJECTS_CURSOR },
      },
      last: { summary: 'The last page', value: { namespace: 'document', objects: ['specs'], next_cursor: null } },
    }),
  },
  grantsCreate: {
    request: named({
      direct: { summary: 'A user owns a document', value: { subject: 'user:alice', relation: 'owner', object: 'document:q3' } },
      parent: {
        summary: 'A folder is the parent of a document: its viewers view the document (parent->viewer)',
        value: { subject: 'folder:f1', relation: 'parent', object: 'document:q3' },
      },
      member: {
        summary: 'An agent acts for a user',
        value: { subject: 'agent:release-bot', relation: 'member', object: 'user:alice' },
      },
    }),
    201: single({ subject: 'user:alice', relation: 'owner', object: 'document:q3', created_at: CREATED_AT, not_before: null, expires_at: null }),
    200: single({ subject: 'user:alice', relation: 'owner', object: 'document:q3', created_at: CREATED_AT, not_before: null, expires_at: null }),
  },
  changesList: {
    200: single({
      changes: [
        {
          revision: REVISION,
          at: CREATED_AT,
          kind: 'grant',
          op: 'create',
          subject: 'user:alice',
          relation: 'owner',
          object: 'document:q3',
          created_at: CREATED_AT,
          not_before: null,
          expires_at: null,
          actor: { key_id: 'key_4Vq8ZrT1mX' },
        },
        {
          revision: NEXT_REVISION,
          at: UPDATED_AT,
          kind: 'agent',
          op: 'delete',
          ...AGENT,
          actor: { client_id: 'oc_4Vq8ZrT1mXa2Bc3De4Fg', sub: 'key_4Vq8ZrT1mX' },
        },
      ],
      next_revision: NEXT_REVISION,
    }),
  },
  grantsRevoke: { request: single({ subject: 'user:alice', relation: 'owner', object: 'document:q3' }) },
  grantsList: {
    200: single({
      grants: [
        { subject: 'folder:f1', relation: 'parent', object: 'document:q3', created_at: CREATED_AT, not_before: null, expires_at: null },
        {
          subject: 'user:alice',
          relation: 'owner',
          object: 'document:q3',
          created_at: CREATED_AT,
          not_before: null,
          expires_at: '2026-12-31T23:59:59.000Z',
        },
      ],
      next_cursor: null,
    }),
  },
  grantsBatch: {
    request: single({
      writes: [
        { subject: 'folder:f1', relation: 'parent', object: 'document:q3' },
        { subject: 'user:bob', relation: 'viewer', object: 'folder:f1' },
      ],
      deletes: [{ subject: 'user:carol', relation: 'editor', object: 'document:q3' }],
    }),
    200: single({ written: 2, deleted: 1 }),
  },
  namespacesCreate: {
    request: named({
      document: { summary: 'Declared relations, with includes and an arrow', value: DOCUMENT_NAMESPACE_EXAMPLE },
      open: { summary: 'An open namespace: any relation, nothing inherited', value: { name: 'folder' } },
    }),
    201: single({ ...DOCUMENT_NAMESPACE_EXAMPLE, created_at: CREATED_AT, updated_at: CREATED_AT }),
  },
  namespacesList: {
    200: single({
      namespaces: [
        { name: 'agent', relations: null, created_at: CREATED_AT, updated_at: CREATED_AT },
        { ...DOCUMENT_NAMESPACE_EXAMPLE, created_at: CREATED_AT, updated_at: CREATED_AT },
        { name: 'user', relations: null, created_at: CREATED_AT, updated_at: CREATED_AT },
      ],
    }),
  },
  namespacesGet: { 200: single({ ...DOCUMENT_NAMESPACE_EXAMPLE, created_at: CREATED_AT, updated_at: CREATED_AT }) },
  namespacesUpdate: {
    request: single({ relations: { ...DOCUMENT_NAMESPACE_EXAMPLE.relations, approver: { includes: ['owner'] } } }),
    200: single({
      name: DOCUMENT_NAMESPACE_EXAMPLE.name,
      relations: { ...DOCUMENT_NAMESPACE_EXAMPLE.relations, approver: { includes: ['owner'] } },
      created_at: CREATED_AT,
      updated_at: UPDATED_AT,
    }),
  },
  agentsCreate: {
    request: single({ external_id: 'release-bot', display_name: 'Release bot', owner: 'user:alice', scope: ['document:viewer'] }),
    201: single(AGENT),
  },
  agentsList: { 200: single({ agents: [AGENT], next_cursor: null }) },
  agentsGet: { 200: single(AGENT) },
  agentsDelete: { 200: single({ external_id: 'release-bot', grants_removed: 3, clients_removed: 1 }) },
  keysCreate: {
    request: single({ label: 'ci', scopes: ['check:read', 'grant:read'] }),
    201: single(CREATED_KEY),
  },
  keysList: {
    200: single({
      keys: [
        {
          id: 'key_0Ab3Cd5Ef7',
          prefix: 'svc_live_Xy12Zw34',
          label: 'bootstrap',
          scopes: ['admin'],
          created_at: CREATED_AT,
          last_used_at: CREATED_AT,
        },
        { id: CREATED_KEY.id, prefix: CREATED_KEY.prefix, label: 'ci', scopes: CREATED_KEY.scopes, created_at: CREATED_AT, last_used_at: null },
      ],
    }),
  },
  oauthClientsCreate: {
    request: single({ name: 'Release bot', type: 'confidential', scopes: ['check:read'], agent: 'release-bot' }),
    201: single({ ...OAUTH_CLIENT, client_secret: 'svc_cs_Qe4Lm9XbV3kTz8RpW4nYc6DfJ1sGa5Q7Hq2Uo0iZyK' }),
  },
  oauthClientsList: { 200: single({ clients: [OAUTH_CLIENT] }) },
  oauthToken: {
    request: single({ grant_type: 'client_credentials', scope: 'check:read' }),
    200: single({
      access_token: ACCESS_TOKEN,
      token_type: 'Bearer',
      expires_in: DEFAULT_CONFIG.GRANTD_OAUTH_ACCESS_TTL,
      scope: 'check:read',
      tenant: { id: '0b6f3c2e-8a41-4d5e-9c7b-2f1a6d8e4b30', name: 'default' },
    }),
  },
  oauthRegister: {
    request: single({
      client_name: 'Claude Code',
      redirect_uris: ['http://localhost:33418/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'check:read grant:read grant:write',
    }),
    201: single({
      client_id: 'oc_7Hk2Wq9ZpLm4Xc8Vb1Nd',
      client_id_issued_at: 1741944413,
      client_name: 'Claude Code',
      redirect_uris: ['http://localhost:33418/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'check:read grant:read grant:write',
    }),
  },
  oauthIntrospect: {
    200: single({
      active: true,
      scope: 'check:read',
      client_id: OAUTH_CLIENT.client_id,
      sub: 'agent:release-bot',
      token_type: 'Bearer',
      exp: 1741944713,
      iat: 1741944413,
      iss: 'https://grantd.example',
    }),
  },
};
