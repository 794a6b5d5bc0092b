import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isAppRoute, isAppRouteNoBody, isAppRouteOtherResponse, isZodType, type AppRoute, type AppRouter } from '@ts-rest/core';
import { generateOpenApi } from '@ts-rest/open-api';
import type {
  ExampleObject,
  HeaderObject,
  MediaTypeObject,
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
  TagObject,
} from 'openapi3-ts/oas30';
import type { ZodTypeAny } from 'zod';
import { AgentSchema, CreateAgentSchema } from '../contract/agents.ts';
import { DOCUMENT_NAMESPACE_EXAMPLE } from '../contract/examples.ts';
import {
  BulkCheckItemErrorSchema,
  BulkCheckRequestSchema,
  BulkCheckResultSchema,
  CheckRequestSchema,
  CheckResultSchema,
} from '../contract/check.ts';
import { BatchRequestSchema, BatchResultSchema, GrantPageSchema, GrantSchema } from '../contract/grants.ts';
import {
  contract,
  KEY_SCOPES,
  PROBLEM_CONTENT_TYPE,
  PROBLEMS,
  TripleSchema,
  ValidationIssueSchema,
  type Problem,
  type ProblemHeader,
  type ProblemType,
  type RouteMetadata,
} from '../contract/index.ts';
import { CreatedKeySchema, CreateKeySchema, KeySummarySchema } from '../contract/keys.ts';
import { CreateNamespaceSchema, NamespaceSchema, RelationDefinitionSchema } from '../contract/namespaces.ts';
import { ObjectPageSchema } from '../contract/objects.ts';
import { CreatedOAuthClientSchema, CreateOAuthClientSchema, OAuthClientSchema } from '../contract/oauth.ts';
import { KeyScopeSchema } from '../contract/scopes.ts';
import { DEFAULT_CONFIG, type Config } from '../src/config.ts';
import { overBudget } from '../src/engine/budget.ts';
import { problemBody } from '../src/http/problem.ts';
import { packageRoot } from '../src/package-root.ts';

/*
 * The OpenAPI 3.0 document of the /v1 API, derived from the ts-rest contract alone:
 * @ts-rest/open-api renders routes, parameters and zod schemas; this module then fills what it
 * leaves out (problem responses, which it drops because they are `c.otherResponse`s; operation ids,
 * tags, scopes, response descriptions and headers, examples) and moves the contract's named schemas
 * into components/schemas, referenced by $ref wherever the same schema appears.
 * Pure and deterministic: the same contract always gives the same document.
 */

type Schema = SchemaObject | ReferenceObject;
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const OPENAPI_VERSION = '3.0.3';
export const BEARER_SCHEME = 'bearer';

/** Tag of every operation, by the contract key it lives under. */
const TAGS: Record<string, TagObject> = {
  check: { name: 'Check', description: 'Authorization checks: does a subject hold a relation on an object?' },
  objects: { name: 'Objects', description: 'Which objects of a namespace a subject reaches under a relation.' },
  grants: { name: 'Grants', description: 'Relationship grants: (subject, relation, object) triples.' },
  namespaces: { name: 'Namespaces', description: 'Kinds of objects, and the relations they declare.' },
  agents: { name: 'Agents', description: 'Non-human subjects with a scope mask, and their killswitch.' },
  keys: { name: 'Keys', description: 'API keys of the tenant. Every operation needs the `admin` scope.' },
  oauth: { name: 'OAuth', description: 'OAuth 2.0 clients of the tenant (docs/oauth.md). Every operation needs the `admin` scope.' },
};

/** Top-level contract routes filed under another route's tag. */
const TAG_ALIAS: Record<string, string> = { checkBulk: 'check' };

/**
 * Named schemas of the contract, in the order components/schemas lists them. Wherever the
 * document holds a schema identical to one of these, it becomes a $ref to it. `output` says whether
 * it is rendered as zod's output (responses) or input (request bodies, with defaults optional).
 */
const NAMED_SCHEMAS: ReadonlyArray<{ name: string; schema: ZodTypeAny; output: boolean }> = [
  { name: 'CheckRequest', schema: CheckRequestSchema, output: false },
  { name: 'CheckResult', schema: CheckResultSchema, output: true },
  { name: 'BulkCheckRequest', schema: BulkCheckRequestSchema, output: false },
  { name: 'BulkCheckResult', schema: BulkCheckResultSchema, output: true },
  { name: 'BulkCheckItemError', schema: BulkCheckItemErrorSchema, output: true },
  { name: 'ObjectPage', schema: ObjectPageSchema, output: true },
  { name: 'Triple', schema: TripleSchema, output: false },
  { name: 'Grant', schema: GrantSchema, output: true },
  { name: 'GrantPage', schema: GrantPageSchema, output: true },
  { name: 'GrantBatchRequest', schema: BatchRequestSchema, output: false },
  { name: 'GrantBatchResult', schema: BatchResultSchema, output: true },
  { name: 'CreateNamespaceRequest', schema: CreateNamespaceSchema, output: false },
  { name: 'RelationDefinition', schema: RelationDefinitionSchema, output: true },
  { name: 'Namespace', schema: NamespaceSchema, output: true },
  { name: 'NamespaceList', schema: contract.namespaces.list.responses[200], output: true },
  { name: 'CreateAgentRequest', schema: CreateAgentSchema, output: false },
  { name: 'Agent', schema: AgentSchema, output: true },
  { name: 'AgentPage', schema: contract.agents.list.responses[200], output: true },
  { name: 'AgentDeleted', schema: contract.agents.delete.responses[200], output: true },
  { name: 'CreateKeyRequest', schema: CreateKeySchema, output: false },
  { name: 'CreatedKey', schema: CreatedKeySchema, output: true },
  { name: 'KeySummary', schema: KeySummarySchema, output: true },
  { name: 'KeyList', schema: contract.keys.list.responses[200], output: true },
  { name: 'CreateOAuthClientRequest', schema: CreateOAuthClientSchema, output: false },
  { name: 'CreatedOAuthClient', schema: CreatedOAuthClientSchema, output: true },
  { name: 'OAuthClient', schema: OAuthClientSchema, output: true },
  { name: 'OAuthClientList', schema: contract.oauth.clients.list.responses[200], output: true },
  { name: 'KeyScope', schema: KeyScopeSchema, output: true },
  { name: 'ValidationIssue', schema: ValidationIssueSchema, output: true },
];

/** A realistic problem of each type, for examples. */
const PROBLEM_EXAMPLE: Record<ProblemType, Problem> = {
  'invalid-request': problemBody('invalid-request', 'body.relation: Required', [{ path: 'body.relation', message: 'Required' }]),
  'invalid-subject': problemBody('invalid-subject', 'body.subject: must be <namespace>:<id>, e.g. user:alice', [
    { path: 'body.subject', message: 'must be <namespace>:<id>, e.g. user:alice' },
  ]),
  'invalid-object': problemBody('invalid-object', 'body.object: must be <namespace>:<id>, e.g. user:alice', [
    { path: 'body.object', message: 'must be <namespace>:<id>, e.g. user:alice' },
  ]),
  'unknown-relation': problemBody('unknown-relation', 'namespace document declares no relation approver'),
  'invalid-namespace': problemBody('invalid-namespace', 'relation viewer includes "parent->viewer", but parent is not declared'),
  'invalid-cursor': problemBody('invalid-cursor', 'the cursor was not issued for this query'),
  unauthenticated: problemBody('unauthenticated', 'send an API key as Authorization: Bearer <secret>'),
  'insufficient-scope': problemBody('insufficient-scope', 'this operation needs a key with scope grant:write'),
  'not-found': problemBody('not-found', 'no route GET /v1/nothing'),
  'namespace-not-found': problemBody('namespace-not-found', 'namespace invoice does not exist'),
  'agent-not-found': problemBody('agent-not-found', 'agent release-bot is not registered'),
  'key-not-found': problemBody('key-not-found', 'no live key key_4Vq8ZrT1mX'),
  'client-not-found': problemBody('client-not-found', 'no OAuth client oc_4Vq8ZrT1mXa2Bc3De4Fg'),
  'namespace-exists': problemBody('namespace-exists', 'namespace document already exists'),
  'agent-exists': problemBody('agent-exists', 'agent release-bot already exists'),
  'payload-too-large': problemBody('payload-too-large', 'the body is larger than 1 MiB'),
  'unsupported-media-type': problemBody('unsupported-media-type', 'send the body as application/json'),
  'check-too-complex': problemBody('check-too-complex', overBudget(DEFAULT_CONFIG.GRANTD_CHECK_BUDGET).detail),
  'rate-limited': problemBody('rate-limited', 'this key is limited to 100 requests a second; retry in 1 s'),
  internal: problemBody('internal', 'an internal error occurred; quote request id 1f0c6a52-3b7e-4c59-9a43-5d2f0e8b7c11 when reporting it'),
  unavailable: problemBody('unavailable', 'the database is unreachable; retry shortly'),
};

const HEADERS: Record<'X-Request-Id' | ProblemHeader, HeaderObject> = {
  'X-Request-Id': {
    description: "Id of this request, also in the server's log line for it: the caller's `X-Request-Id` when sane, else a new UUID.",
    schema: { type: 'string' },
  },
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with: `Bearer realm="grantd"`, plus `error="invalid_token"` when a key was sent.',
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
};

const STATUS_TEXT: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** Descriptions of success responses, by operation id and status; the status text otherwise. */
const SUCCESS_DESCRIPTION: Record<string, Record<string, string>> = {
  check: { 200: 'The answer.' },
  checkBulk: { 200: 'One result per check, in request order.' },
  objectsList: { 200: 'One page of object ids.' },
  grantsCreate: { 201: 'The grant was created.', 200: 'The grant already existed: the original grant, unchanged.' },
  grantsRevoke: { 204: 'The grant is gone (or never existed).' },
  grantsList: { 200: 'One page of grants.' },
  grantsBatch: { 200: 'Everything was applied.' },
  namespacesCreate: { 201: 'The namespace was created.' },
  namespacesList: { 200: 'Every namespace of the tenant.' },
  agentsCreate: { 201: 'The agent was registered.' },
  agentsList: { 200: 'One page of agents.' },
  agentsGet: { 200: 'The agent.' },
  agentsDelete: { 200: 'The agent, every grant naming it, and its OAuth clients and their tokens are gone.' },
  keysCreate: { 201: 'The key, with its secret: the only time the secret is shown.' },
  keysList: { 200: 'The live keys.' },
  keysRevoke: { 204: 'The key is revoked.' },
  oauthClientsCreate: { 201: 'The client, with its secret if confidential: the only time the secret is shown.' },
  oauthClientsList: { 200: 'Every client of the tenant.' },
  oauthClientsDelete: { 204: 'The client and its tokens are gone.' },
};

/** Descriptions and examples of path and query parameters the contract leaves undescribed. */
const PARAMETER_DOCS: Record<string, { description?: string; example?: Json }> = {
  'path.external_id': { description: 'The agent\'s external_id', example: 'release-bot' },
  'path.id': { description: 'The key id (`key_...`)', example: 'key_4Vq8ZrT1mX' },
  'path.client_id': { description: 'The client id (`oc_...`)', example: 'oc_4Vq8ZrT1mXa2Bc3De4Fg' },
  'objectsList.query.namespace': { example: 'document' },
  'objectsList.query.subject': { example: 'user:alice' },
  'objectsList.query.relation': { example: 'viewer' },
};

// Example values, from docs/api.md#endpoints.
const CREATED_AT = '2025-03-14T09:26:53.589Z';
const OBJECTS_CURSOR = 'WyJxMyJd.n3QqM0vJ8f5xYx8s0Rk7Lw';
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
  created_at: CREATED_AT,
};

const single = (value: Json): MediaTypeObject => ({ example: value });
const named = (examples: Record<string, { summary: string; value: Json }>): MediaTypeObject => ({
  examples: Object.fromEntries(Object.entries(examples).map(([k, v]) => [k, v satisfies ExampleObject])),
});

/** Examples of request bodies and success responses, by operation id ("request" or the status). */
const EXAMPLES: Record<string, Record<string, MediaTypeObject>> = {
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
  objectsList: {
    200: named({
      more: { summary: 'A page with more to come (limit=2)', value: { namespace: 'document', objects: ['q3', 'roadmap'], next_cursor: OBJECTS_CURSOR } },
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
    201: single({ subject: 'user:alice', relation: 'owner', object: 'document:q3', created_at: CREATED_AT }),
    200: single({ subject: 'user:alice', relation: 'owner', object: 'document:q3', created_at: CREATED_AT }),
  },
  grantsRevoke: { request: single({ subject: 'user:alice', relation: 'owner', object: 'document:q3' }) },
  grantsList: {
    200: single({
      grants: [
        { subject: 'folder:f1', relation: 'parent', object: 'document:q3', created_at: CREATED_AT },
        { subject: 'user:alice', relation: 'owner', object: 'document:q3', created_at: CREATED_AT },
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
    201: single({ ...DOCUMENT_NAMESPACE_EXAMPLE, created_at: CREATED_AT }),
  },
  namespacesList: {
    200: single({
      namespaces: [
        { name: 'agent', relations: null, created_at: CREATED_AT },
        { ...DOCUMENT_NAMESPACE_EXAMPLE, created_at: CREATED_AT },
        { name: 'user', relations: null, created_at: CREATED_AT },
      ],
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
        { id: 'key_0Ab3Cd5Ef7', prefix: 'svc_live_Xy12Zw34', label: 'bootstrap', scopes: ['admin'], created_at: CREATED_AT, last_used_at: CREATED_AT },
        { id: CREATED_KEY.id, prefix: CREATED_KEY.prefix, label: 'ci', scopes: CREATED_KEY.scopes, created_at: CREATED_AT, last_used_at: null },
      ],
    }),
  },
  oauthClientsCreate: {
    request: single({ name: 'Release bot', type: 'confidential', scopes: ['check:read'], agent: 'release-bot' }),
    201: single({ ...OAUTH_CLIENT, client_secret: 'svc_cs_Qe4Lm9XbV3kTz8RpW4nYc6DfJ1sGa5Q7Hq2Uo0iZyK' }),
  },
  oauthClientsList: { 200: single({ clients: [OAUTH_CLIENT] }) },
};

const INFO_DESCRIPTION = `Multi-tenant, relationship-based authorization service with first-class AI agents.

**Authentication.** Every \`/v1\` operation needs an API key of the calling tenant, sent as
\`Authorization: Bearer svc_live_...\`. Each key carries scopes (\`check:read\`, \`grant:read\`,
\`grant:write\`, \`admin\`; \`admin\` implies every other one); each operation names the scope it
requires (also in its \`x-required-scope\`). A missing, unknown or revoked key is 401
\`unauthenticated\`; a key lacking the scope is 403 \`insufficient-scope\`.

**Names.** Namespaces and relations: \`^[a-z][a-z0-9_]{0,62}$\`. Ids: 1 to 256 characters of
\`A-Z a-z 0-9 . _ - @ | ~ + =\`. Subjects and objects are \`<namespace>:<id>\`, e.g. \`user:alice\`,
\`document:q3\`, \`agent:release-bot\`.

**Errors** are RFC 7807 problems (\`application/problem+json\`): \`type\`, \`title\`, \`status\`,
\`detail\`, and for validation failures \`errors\` (\`[{path, message}]\`). Each response lists the
problem types it can carry.

**Pagination.** Lists take \`limit\` (1 to 1000, default 100) and \`cursor\`, and answer
\`next_cursor\`: pass it as \`cursor\` for the next page; \`null\` when there is none. Cursors are
opaque and bound to the query they were issued for.

**Limits.** Bodies up to 1 MiB; bulk checks 1000 items; batches 1000 triples.

Every response carries \`X-Request-Id\`. Unauthenticated: \`GET /openapi.json\` (this document),
\`GET /docs\`, \`GET /healthz\`, \`GET /readyz\`, \`GET /metrics\`. A grantd listens on port 8080 by default.`;

// ---------------------------------------------------------------------------------------------

interface RouteEntry {
  /** Contract keys leading to the route, e.g. ['grants', 'list']. */
  keys: string[];
  route: AppRoute;
}

function routesOf(router: AppRouter, keys: string[] = []): RouteEntry[] {
  return Object.entries(router).flatMap(([key, value]) =>
    isAppRoute(value) ? [{ keys: [...keys, key], route: value }] : routesOf(value as AppRouter, [...keys, key]),
  );
}

/** Readable, stable operation id: the contract keys in camelCase, e.g. `grantsList`, `checkBulk`. */
export const operationIdOf = (keys: string[]): string =>
  keys.map((k, i) => (i === 0 ? k : k.charAt(0).toUpperCase() + k.slice(1))).join('');

/** The OpenAPI path of a contract route: `/v1/agents/:external_id` is `/v1/agents/{external_id}`. */
export const openApiPathOf = (route: AppRoute): string => route.path.replace(/:(\w+)/g, '{$1}');

const pascal = (kebab: string): string =>
  kebab
    .split(/[-_]/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('');

/** Canonical JSON (sorted keys), to compare schemas structurally. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** The contract with every `c.otherResponse` replaced by its body schema, which @ts-rest/open-api renders. */
function withPlainResponses(router: AppRouter): AppRouter {
  return Object.fromEntries(
    Object.entries(router).map(([key, value]) => {
      if (!isAppRoute(value)) return [key, withPlainResponses(value as AppRouter)];
      const responses = Object.fromEntries(
        Object.entries(value.responses).map(([status, response]) => [
          status,
          isAppRouteOtherResponse(response) ? response.body : response,
        ]),
      );
      return [key, { ...value, responses }];
    }),
  ) as AppRouter;
}

/** Renders zod schemas exactly as @ts-rest/open-api renders route bodies (input) and responses (output). */
function renderSchemas(entries: ReadonlyArray<{ name: string; schema: ZodTypeAny; output: boolean }>): Map<string, SchemaObject> {
  const routes = Object.fromEntries(
    entries.map(({ name, schema }) => [
      name,
      { method: 'POST', path: `/${name}`, body: schema, responses: { 200: schema } } as unknown as AppRoute,
    ]),
  );
  const rendered = generateOpenApi(routes, { info: { title: '', version: '' } }) as unknown as OpenAPIObject;
  const result = new Map<string, SchemaObject>();
  for (const { name, output } of entries) {
    const operation = rendered.paths[`/${name}`]!.post as OperationObject;
    const media = output
      ? (operation.responses['200'] as ResponseObject).content!['application/json']!
      : (operation.requestBody as RequestBodyObject).content['application/json']!;
    result.set(name, media.schema as SchemaObject);
  }
  return result;
}

/** Visits every schema position (not following $refs) and lets `replace` swap a schema for another. */
function mapSchema(schema: Schema, replace: (s: Schema, isRoot: boolean) => Schema | undefined, isRoot = true): Schema {
  const replaced = replace(schema, isRoot);
  if (replaced) return replaced;
  if ('$ref' in schema) return schema;
  const s: SchemaObject = { ...schema };
  const sub = (x: Schema) => mapSchema(x, replace, false);
  if (s.properties) s.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, sub(v)]));
  if (s.items) s.items = sub(s.items);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') s.additionalProperties = sub(s.additionalProperties);
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) if (s[key]) s[key] = s[key]!.map(sub);
  if (s.not) s.not = sub(s.not);
  return s;
}

/** Every schema of the document, with a JSON-pointer-ish location, for checks. */
export function* schemasOf(document: OpenAPIObject): Generator<[string, Schema]> {
  function* walk(schema: Schema, at: string): Generator<[string, Schema]> {
    yield [at, schema];
    if ('$ref' in schema) return;
    for (const [k, v] of Object.entries(schema.properties ?? {})) yield* walk(v, `${at}/properties/${k}`);
    if (schema.items) yield* walk(schema.items, `${at}/items`);
    if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
      yield* walk(schema.additionalProperties, `${at}/additionalProperties`);
    }
    for (const key of ['allOf', 'anyOf', 'oneOf'] as const) for (const [i, v] of (schema[key] ?? []).entries()) yield* walk(v, `${at}/${key}/${i}`);
    if (schema.not) yield* walk(schema.not, `${at}/not`);
  }
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) yield* walk(schema, `#/components/schemas/${name}`);
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item) as [string, OperationObject][]) {
      const at = `#/paths/${path}/${method}`;
      for (const p of (op.parameters ?? []) as ParameterObject[]) if (p.schema) yield* walk(p.schema, `${at}/parameters/${p.name}`);
      for (const [type, media] of Object.entries((op.requestBody as RequestBodyObject | undefined)?.content ?? {})) {
        if (media.schema) yield* walk(media.schema, `${at}/requestBody/${type}`);
      }
      for (const [status, response] of Object.entries(op.responses) as [string, ResponseObject][]) {
        for (const [type, media] of Object.entries(response.content ?? {})) if (media.schema) yield* walk(media.schema, `${at}/responses/${status}/${type}`);
      }
    }
  }
  for (const [name, response] of Object.entries(document.components?.responses ?? {}) as [string, ResponseObject][]) {
    for (const [type, media] of Object.entries(response.content ?? {})) if (media.schema) yield* walk(media.schema, `#/components/responses/${name}/${type}`);
  }
}

/**
 * Schema nodes without `type` (nor $ref or a composition): @ts-rest/open-api renders `z.unknown()` and
 * `z.any()` as `{nullable: true}` or `{}`, which linters such as @redocly/cli reject.
 */
export function untypedSchemas(document: OpenAPIObject): string[] {
  const bad: string[] = [];
  for (const [at, schema] of schemasOf(document)) {
    if (!('$ref' in schema) && schema.type === undefined && !schema.allOf && !schema.anyOf && !schema.oneOf) bad.push(at);
  }
  return bad;
}

function problemTypesOf(schema: SchemaObject): ProblemType[] {
  const typeSchema = schema.properties?.type as SchemaObject | undefined;
  const types = typeSchema?.enum as ProblemType[] | undefined;
  if (!types?.length) throw new Error(`a problem response schema without a type enum: ${JSON.stringify(schema)}`);
  return types;
}

const problemDescription = (status: string, types: ProblemType[]): string =>
  types.length === 1
    ? `${STATUS_TEXT[status] ?? status}, \`${types[0]}\`: ${meaningOf(types[0]!)}.`
    : [`${STATUS_TEXT[status] ?? status}, one of these problem types:`, '', ...types.map((t) => `- \`${t}\`: ${meaningOf(t)}`)].join('\n');

/** The problem type's meaning, each `{SETTING}` in it replaced by the setting's default. */
function meaningOf(type: ProblemType): string {
  return PROBLEMS[type].meaning.replace(/\{([A-Z_]+)\}/g, (_, name: string) => {
    const value = DEFAULT_CONFIG[name as keyof Config];
    if (value === undefined) throw new Error(`the meaning of ${type} names ${name}, which has no default`);
    return String(value);
  });
}

const REQUEST_ID_HEADER = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };

function headersOf(types: ProblemType[]): Record<string, ReferenceObject> {
  const extra = types.length === 1 ? PROBLEMS[types[0]!].headers : [];
  return { ...REQUEST_ID_HEADER, ...Object.fromEntries(extra.map((h) => [h, { $ref: `#/components/headers/${h}` }])) };
}

/** Name of the components/examples entry holding PROBLEM_EXAMPLE[type]. */
const problemExampleName = (type: ProblemType): string => `Problem${pascal(type)}`;

function problemExamples(types: ProblemType[], status: string): MediaTypeObject {
  for (const t of types) {
    if (String(PROBLEMS[t].status) !== status) throw new Error(`problem type ${t} is answered with ${PROBLEMS[t].status}, not ${status}`);
  }
  return { examples: Object.fromEntries(types.map((t) => [t, { $ref: `#/components/examples/${problemExampleName(t)}` }])) };
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}

/** The OpenAPI 3.0 document of the /v1 API, derived from the contract alone. */
export function buildOpenApiDocument(): OpenAPIObject {
  const entries = routesOf(contract);
  const byOperationId = new Map(entries.map((e) => [operationIdOf(e.keys), e]));
  if (byOperationId.size !== entries.length) throw new Error('two contract routes map to the same operation id');

  const generated = clone(
    generateOpenApi(withPlainResponses(contract), { info: { title: 'grantd', version: packageVersion() } }, { setOperationId: 'concatenated-path' }),
  ) as unknown as OpenAPIObject;

  // Named schemas, and the problem schema of each set of types a response can carry.
  const named = renderSchemas(NAMED_SCHEMAS);
  const componentSchemas = new Map<string, SchemaObject>(named);
  const problemSchemas = new Map<string, SchemaObject>();
  const componentResponses = new Map<string, ResponseObject>();
  const usedProblemTypes = new Set<ProblemType>();
  const nameBySchema = new Map<string, string>();
  for (const [name, schema] of named) {
    const key = canonical(schema);
    const other = nameBySchema.get(key);
    if (other) throw new Error(`schemas ${other} and ${name} render identically; name one of them only`);
    nameBySchema.set(key, name);
  }
  const refTo = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });
  const useComponents = (schema: Schema): Schema =>
    mapSchema(schema, (s, isRoot) => {
      const name = isRoot ? undefined : nameBySchema.get(canonical(s));
      return name ? refTo(name) : undefined;
    });
  const asComponent = (schema: Schema): Schema => {
    const name = nameBySchema.get(canonical(schema));
    return name ? refTo(name) : useComponents(schema);
  };

  const paths: OpenAPIObject['paths'] = {};
  for (const [path, item] of Object.entries(generated.paths)) {
    for (const [method, op] of Object.entries(item) as [string, OperationObject][]) {
      const entry = byOperationId.get(operationIdOf(String(op.operationId).split('.')));
      if (!entry) throw new Error(`no contract route for ${method} ${path}`);
      const operationId = operationIdOf(entry.keys);
      const { scope } = entry.route.metadata as RouteMetadata;
      const tag = TAGS[TAG_ALIAS[entry.keys[0]!] ?? entry.keys[0]!];
      if (!tag) throw new Error(`no tag for the contract key ${entry.keys[0]}`);
      const examples = EXAMPLES[operationId] ?? {};

      const parameters = ((op.parameters ?? []) as ParameterObject[]).map((p): ParameterObject => {
        const docs = { ...PARAMETER_DOCS[`${p.in}.${p.name}`], ...PARAMETER_DOCS[`${operationId}.${p.in}.${p.name}`] };
        return {
          name: p.name,
          in: p.in,
          description: p.description ?? docs.description,
          ...(p.required ? { required: true } : {}),
          schema: asComponent(p.schema!),
          ...(docs.example !== undefined ? { example: docs.example } : {}),
        };
      });

      let requestBody: RequestBodyObject | undefined;
      if (op.requestBody) {
        const media = (op.requestBody as RequestBodyObject).content['application/json']!;
        const schema = media.schema as SchemaObject;
        requestBody = {
          description: schema.description ?? 'JSON body',
          required: true,
          content: { 'application/json': { schema: asComponent(schema), ...examples.request } },
        };
      }

      const responses: Record<string, ResponseObject | ReferenceObject> = {};
      for (const [status, response] of Object.entries(op.responses) as [string, ResponseObject][]) {
        const declared = entry.route.responses[Number(status)];
        if (declared === undefined) throw new Error(`${operationId}: no response ${status} in the contract`);
        const media = response.content?.['application/json'];
        if (isAppRouteOtherResponse(declared)) {
          if (declared.contentType !== PROBLEM_CONTENT_TYPE) throw new Error(`${operationId} ${status}: unexpected content type ${declared.contentType}`);
          const schema = media!.schema as SchemaObject;
          const types = problemTypesOf(schema);
          for (const t of types) usedProblemTypes.add(t);
          const schemaName = `Problem${types.map(pascal).join('Or')}`;
          const known = problemSchemas.get(schemaName);
          if (known && canonical(known) !== canonical(schema)) throw new Error(`two different schemas would be named ${schemaName}`);
          problemSchemas.set(schemaName, schema);
          const problemResponse: ResponseObject = {
            description: problemDescription(status, types),
            headers: headersOf(types),
            content: { [PROBLEM_CONTENT_TYPE]: { schema: refTo(schemaName), ...problemExamples(types, status) } },
          };
          if (types.length === 1) {
            const responseName = pascal(types[0]!);
            componentResponses.set(responseName, problemResponse);
            responses[status] = { $ref: `#/components/responses/${responseName}` };
          } else {
            responses[status] = problemResponse;
          }
        } else if (isZodType(declared)) {
          responses[status] = {
            description: SUCCESS_DESCRIPTION[operationId]?.[status] ?? STATUS_TEXT[status] ?? status,
            headers: { ...REQUEST_ID_HEADER },
            content: { 'application/json': { schema: asComponent(media!.schema!), ...examples[status] } },
          };
        } else if (isAppRouteNoBody(declared)) {
          responses[status] = {
            description: SUCCESS_DESCRIPTION[operationId]?.[status] ?? STATUS_TEXT[status] ?? status,
            headers: { ...REQUEST_ID_HEADER },
          };
        } else {
          throw new Error(`${operationId} ${status}: only zod schemas, c.noBody() and problem responses can be documented`);
        }
      }
      const sortedResponses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));

      const operation: OperationObject = {
        operationId,
        tags: [tag.name],
        summary: op.summary,
        description: [
          op.description,
          `Requires an API key with scope \`${scope}\`${scope === 'admin' ? '' : ' (or `admin`)'}.`,
        ]
          .filter(Boolean)
          .join('\n\n'),
        'x-required-scope': scope,
        security: [{ [BEARER_SCHEME]: [] }],
        ...(parameters.length ? { parameters } : {}),
        ...(requestBody ? { requestBody } : {}),
        responses: sortedResponses,
      };
      paths[path] = { ...paths[path], [method]: operation };
    }
  }

  const schemas: Record<string, Schema> = {};
  for (const [name, schema] of componentSchemas) schemas[name] = useComponents(schema);
  for (const [name, schema] of [...problemSchemas].sort(([a], [b]) => (a < b ? -1 : 1))) schemas[name] = useComponents(schema);
  refineSchemas(schemas);

  const usedTags = new Set(Object.values(paths).flatMap((item) => Object.values(item).flatMap((op: OperationObject) => op.tags ?? [])));
  const document: OpenAPIObject = {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'grantd',
      version: generated.info.version,
      description: INFO_DESCRIPTION,
      license: { name: 'MIT', url: 'https://spdx.org/licenses/MIT.html' },
    },
    // Relative: the grantd that serves this document (GET /openapi.json) is the one to call.
    servers: [{ url: '/', description: 'The grantd serving this document' }],
    tags: Object.values(TAGS).filter((t) => usedTags.has(t.name)),
    security: [{ [BEARER_SCHEME]: [] }],
    paths,
    components: {
      securitySchemes: {
        [BEARER_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'svc_live_<base62>',
          description: 'An API key of the tenant, `svc_live_` followed by at least 40 base62 characters.',
        },
      },
      schemas,
      responses: Object.fromEntries([...componentResponses].sort(([a], [b]) => (a < b ? -1 : 1))),
      headers: HEADERS,
      examples: Object.fromEntries(
        [...usedProblemTypes].sort().map((t) => [problemExampleName(t), { summary: t, value: PROBLEM_EXAMPLE[t] as unknown as Json }]),
      ),
    },
  };

  codeSpanPlaceholders(document);
  const untyped = untypedSchemas(document);
  if (untyped.length) throw new Error(`schemas without a type: ${untyped.join(', ')}`);
  return document;
}

/**
 * Descriptions are CommonMark, where the contract's placeholders such as `<namespace>:<id>` read as
 * HTML tags and vanish (Swagger UI shows "Subject, :, e.g. ..."), and a lone `*` (a scope wildcard)
 * may start emphasis. Outside code spans, every word holding a `<name>` placeholder, and every
 * lone `*` or `*:*`, becomes a code span.
 */
function codeSpanPlaceholders(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) codeSpanPlaceholders(item);
  } else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'example' || k === 'examples' || k === 'default' || k === 'enum') continue;
      if (k === 'description' && typeof v === 'string') (node as Record<string, unknown>)[k] = codeSpans(v);
      else codeSpanPlaceholders(v);
    }
  }
}

export const codeSpans = (markdown: string): string =>
  markdown
    .split('`')
    .map((part, i) =>
      i % 2 === 1
        ? part
        : part
            .replace(/[^\s`(]*<[a-z_]+>[^\s`,;)]*?(?=[.:]?(?:[\s,;)]|$))/g, (word) => `\`${word}\``)
            .replace(/(^|\s)(\*(?::\*)?)(?=[\s,.;]|$)/g, (_, space: string, star: string) => `${space}\`${star}\``),
    )
    .join('`');

/** What zod refinements say but @ts-rest/open-api cannot render. */
function refineSchemas(schemas: Record<string, Schema>): void {
  const object = (name: string): SchemaObject => {
    const s = schemas[name];
    if (!s || '$ref' in s) throw new Error(`no component schema ${name}`);
    return s;
  };
  const property = (name: string, prop: string): SchemaObject => {
    const s = object(name).properties?.[prop];
    if (!s || '$ref' in s) throw new Error(`no property ${name}.${prop}`);
    return s;
  };
  // BatchRequestSchema: 1 to 1000 triples in writes and deletes together.
  const batch = object('GrantBatchRequest');
  batch.description = 'Grants to write and grants to delete: 1 to 1000 triples in all, applied all or nothing.';
  for (const list of ['writes', 'deletes']) property('GrantBatchRequest', list).maxItems = 1000;
  // RelationsSchema: at most 128 relations, each named like a namespace.
  const relations = property('CreateNamespaceRequest', 'relations');
  relations.maxProperties = 128;
  relations.description = `${relations.description}. At most 128 relations, each named ^[a-z][a-z0-9_]{0,62}$.`;
  // KEY_SCOPES is the list the KeyScope enum renders.
  if (canonical((object('KeyScope').enum ?? []) as Json) !== canonical([...KEY_SCOPES])) throw new Error('KeyScope does not render KEY_SCOPES');
}
