import type { HeaderObject, ParameterObject, ReferenceObject } from 'openapi3-ts/oas30';
import { CONSISTENCY_HEADER, REVISION_HEADER, type ProblemHeader } from '../../contract/index.ts';
import { ACCESS_TOKEN } from './examples.ts';
import type { Json } from './json.ts';

/*
 * The document's prose that the contract does not hold: the API's overview, response and parameter
 * descriptions, and the headers.
 */

export const INFO_DESCRIPTION = `Multi-tenant, relationship-based authorization service with first-class AI agents.

**Authentication.** Every \`/v1\` operation but the OAuth 2.0 protocol's needs an API key of the
calling tenant, sent as \`Authorization: Bearer svc_live_...\`, or an OAuth access token
(\`svc_at_...\`) issued by \`POST /v1/oauth/token\`. Each key carries scopes (\`check:read\`, \`grant:read\`,
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

**OAuth 2.0.** \`/v1/oauth/token\`, \`/v1/oauth/revoke\` and \`/v1/oauth/introspect\` take
\`application/x-www-form-urlencoded\` bodies and answer errors as RFC 6749 \`{error, error_description}\`;
\`/v1/oauth/authorize\` and the consent page are for browsers (docs/oauth.md).

**Revisions.** Every write answers with \`Grantd-Revision\`, an opaque token naming a state that
includes it. A read may send \`Grantd-Consistency: at-least <revision>\` (answered, on any node, from a
state that includes it, waiting at most 2 s, else 503 \`unavailable\`) or \`Grantd-Consistency: full\`.
\`GET /v1/changes\` is the tenant's changes in commit order.

**Limits.** Bodies up to 1 MiB; bulk checks 1000 items; batches 1000 triples.

Every response carries \`X-Request-Id\`. Unauthenticated: \`GET /openapi.json\` (this document),
\`GET /docs\`, \`GET /healthz\`, \`GET /readyz\`, \`GET /metrics\`. A grantd listens on port 8080 by default.`;

/** components/headers. */
export const HEADERS: Record<'X-Request-Id' | 'Location' | typeof REVISION_HEADER | ProblemHeader, HeaderObject> = {
  'X-Request-Id': {
    description: "Id of this request, also in the server's log line for it: the caller's `X-Request-Id` when sane, else a new UUID.",
    schema: { type: 'string' },
  },
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with: `Bearer realm="grantd"`, plus `error="invalid_token"` when a key was sent.',
    schema: { type: 'string' },
  },
  Location: { description: 'Where the browser goes next.', schema: { type: 'string' } },
  [REVISION_HEADER]: {
    description: 'The revision that includes this write: send it as `Grantd-Consistency: at-least <revision>` to read it on any node.',
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
};

export const headerRef = (name: keyof typeof HEADERS): ReferenceObject => ({ $ref: `#/components/headers/${name}` });

/** The header a read may send (docs/consistency.md#revisions). */
export const CONSISTENCY_PARAMETER: ParameterObject = {
  name: CONSISTENCY_HEADER,
  in: 'header',
  description:
    "`at-least <revision>`: answer from a state that includes the revision (a write's Grantd-Revision, or the changes feed's), " +
    "waiting at most 2 s, else 503 unavailable; `full`: from the database's state when the request arrived. Without it, a write " +
    'on another node shows within 1 s.',
  // No example: Swagger UI would send it with every read, and no revision is valid for every tenant.
  schema: { type: 'string' },
};

/** The header every response carries. */
export const REQUEST_ID_HEADER: Record<string, ReferenceObject> = { 'X-Request-Id': headerRef('X-Request-Id') };

export const STATUS_TEXT: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  302: 'Found',
  303: 'See Other',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  410: 'Gone',
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
  explain: { 200: 'The answer, and why.' },
  objectsList: { 200: 'One page of object ids.' },
  subjectsList: { 200: 'One page of subjects.' },
  grantsCreate: { 201: 'The grant was created.', 200: 'The grant already existed: the original grant, unchanged.' },
  grantsRevoke: { 204: 'The grant is gone (or never existed).' },
  grantsList: { 200: 'One page of grants.' },
  grantsBatch: { 200: 'Everything was applied.' },
  namespacesCreate: { 201: 'The namespace was created.' },
  namespacesList: { 200: 'Every namespace of the tenant.' },
  namespacesGet: { 200: 'The namespace.' },
  namespacesUpdate: { 200: 'The namespace with its new definition (unchanged, updated_at included, when it was the same).' },
  namespacesDelete: { 204: 'The namespace is gone.' },
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
  oauthToken: {
    200: 'The token.',
    400: 'RFC 6749 error: a malformed request, a bad grant or scope.',
    401: 'RFC 6749 `invalid_client`.',
    500: 'RFC 6749 `server_error`.',
  },
  oauthAuthorize: {
    302: 'Back to the client with an RFC 6749 error and iss.',
    303: 'To the consent page.',
    400: 'An error page: the client or redirect URI is not valid, so nothing redirects.',
  },
  oauthResume: { 303: 'Back to the client with code, state and iss, or error=access_denied.', 400: 'An error page.' },
  oauthConsent: { 200: 'The consent page.', 400: 'An error page: the request expired or was begun in another browser.' },
  oauthDecide: {
    303: 'To the authorization route, which redirects to the client.',
    400: 'The consent page again, saying what is missing.',
    403: 'The consent page again: the key was refused, or the form did not come from this page.',
  },
  oauthRevoke: {
    200: 'Revoked, or not a token of this client.',
    400: 'RFC 6749 error.',
    401: 'RFC 6749 `invalid_client`.',
    500: 'RFC 6749 `server_error`.',
  },
  oauthIntrospect: {
    200: 'The RFC 7662 answer.',
    400: 'RFC 6749 error.',
    401: 'RFC 6749 `invalid_client` or `invalid_token`.',
    403: 'RFC 6750 `insufficient_scope`: a Bearer key or token without `check:read`.',
    500: 'RFC 6749 `server_error`.',
  },
  oauthIntrospectByQuery: {
    200: 'The RFC 7662 answer.',
    400: 'RFC 6749 error.',
    401: 'RFC 6749 `invalid_token`.',
    403: 'RFC 6750 `insufficient_scope`: a Bearer key or token without `check:read`.',
    500: 'RFC 6749 `server_error`.',
  },
};

/** Descriptions and examples of path and query parameters the contract leaves undescribed. */
const PARAMETER_DOCS: Record<string, { description?: string; example?: Json }> = {
  'path.name': { description: "The namespace's name", example: 'document' },
  'path.external_id': { description: "The agent's external_id", example: 'release-bot' },
  'path.id': { description: 'The key id (`key_...`)', example: 'key_4Vq8ZrT1mX' },
  'path.client_id': { description: 'The client id (`oc_...`)', example: 'oc_4Vq8ZrT1mXa2Bc3De4Fg' },
  'path.uid': { description: "The authorization request's id, as the redirect to the consent page named it" },
  'oauthAuthorize.query.response_type': { description: 'Always `code`' },
  'oauthAuthorize.query.client_id': { description: 'The client id (`oc_...`)' },
  'oauthAuthorize.query.state': { description: 'Returned unchanged on the redirect' },
  'oauthAuthorize.query.code_challenge_method': { description: 'Always `S256`' },
  'oauthIntrospectByQuery.query.token': { description: 'The access or refresh token', example: ACCESS_TOKEN },
  'oauthIntrospectByQuery.query.token_type_hint': { description: 'What the token is, if the caller knows' },
  'objectsList.query.namespace': { example: 'document' },
  'objectsList.query.subject': { example: 'user:alice' },
  'objectsList.query.relation': { example: 'viewer' },
  'subjectsList.query.object': { example: 'document:q3' },
  'subjectsList.query.relation': { example: 'viewer' },
  'subjectsList.query.subject_namespace': { example: 'user' },
};

/** The description of a success response. */
export const successDescription = (operationId: string, status: string): string =>
  SUCCESS_DESCRIPTION[operationId]?.[status] ?? STATUS_TEXT[status] ?? status;

/** What the document adds to a parameter of an operation: for all operations, then for this one. */
export const parameterDocs = (operationId: string, p: ParameterObject): { description?: string; example?: Json } => ({
  ...PARAMETER_DOCS[`${p.in}.${p.name}`],
  ...PARAMETER_DOCS[`${operationId}.${p.in}.${p.name}`],
});
