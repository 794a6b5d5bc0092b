import { initContract } from '@ts-rest/core';
import { z } from 'zod';

/** Headers a problem response may carry besides X-Request-Id. */
export type ProblemHeader = 'WWW-Authenticate' | 'Retry-After';

interface ProblemDefinition {
  status: number;
  /** The body's `title`: the same for every problem of the type. */
  title: string;
  /**
   * When it is answered, as the OpenAPI document describes its response. `{SETTING}` stands for
   * the server's default of that setting, which the contract cannot know: the generator fills it in.
   */
  meaning: string;
  headers: readonly ProblemHeader[];
}

/** Every problem type grantd answers with: its status, title, meaning and headers (docs/errors.md#problem-types). */
export const PROBLEMS = {
  'invalid-request': {
    status: 400,
    title: 'Invalid request',
    meaning: 'the body, query or path fails the schema (a missing, unknown or mistyped field, a bad `limit`), or the body is not valid JSON',
    headers: [],
  },
  'invalid-subject': { status: 400, title: 'Invalid subject', meaning: 'a malformed subject: it must be `<namespace>:<id>`', headers: [] },
  'invalid-object': { status: 400, title: 'Invalid object', meaning: 'a malformed object: it must be `<namespace>:<id>`', headers: [] },
  'unknown-relation': {
    status: 400,
    title: 'Unknown relation',
    meaning: "the relation is not declared by the object's namespace (one that declares relations)",
    headers: [],
  },
  'invalid-namespace': {
    status: 400,
    title: 'Invalid namespace definition',
    meaning:
      'an inconsistent definition: a reference (includes, requires, excludes) names an undeclared relation, same-object references ' +
      "form a cycle, or a cycle of the tenant's relations passes through an exclusion; `errors` gives the reference's path",
    headers: [],
  },
  'invalid-cursor': { status: 400, title: 'Invalid cursor', meaning: 'a cursor this server did not issue for this query', headers: [] },
  'invalid-revision': {
    status: 400,
    title: 'Invalid revision',
    meaning: "a revision (Grantd-Consistency's or the changes feed's `after`) that this server did not issue for the caller's tenant",
    headers: [],
  },
  unauthenticated: { status: 401, title: 'Unauthenticated', meaning: 'the API key is missing, unknown or revoked', headers: ['WWW-Authenticate'] },
  'insufficient-scope': {
    status: 403,
    title: 'Insufficient scope',
    meaning: "the API key lacks the operation's scope",
    headers: ['WWW-Authenticate'],
  },
  'not-found': { status: 404, title: 'Not found', meaning: 'no such route', headers: [] },
  'namespace-not-found': {
    status: 404,
    title: 'Namespace not found',
    meaning: "the namespace does not exist in the caller's tenant",
    headers: [],
  },
  'agent-not-found': { status: 404, title: 'Agent not found', meaning: "the agent is not registered in the caller's tenant", headers: [] },
  'key-not-found': {
    status: 404,
    title: 'Key not found',
    meaning: "no live key with this id in the caller's tenant (unknown, or already revoked)",
    headers: [],
  },
  'client-not-found': {
    status: 404,
    title: 'Client not found',
    meaning: "no OAuth client with this client_id in the caller's tenant",
    headers: [],
  },
  'method-not-allowed': {
    status: 405,
    title: 'Method not allowed',
    meaning: "the path is one of the API's, but not with this method; `Allow` lists the methods it takes",
    // It answers the methods no operation has, so no operation's responses list it, nor its Allow header.
    headers: [],
  },
  'namespace-exists': {
    status: 409,
    title: 'Namespace exists',
    meaning: 'a namespace of that name exists (`user` and `agent` always do)',
    headers: [],
  },
  'namespace-in-use': {
    status: 409,
    title: 'Namespace in use',
    meaning:
      'the change or delete would leave grants the namespace no longer declares; the detail names each relation (or side) and how many grants use it',
    headers: [],
  },
  'agent-exists': { status: 409, title: 'Agent exists', meaning: 'an agent with that external_id is registered', headers: [] },
  'changes-expired': {
    status: 410,
    title: 'Changes expired',
    meaning: 'the changes after this revision are no longer kept (GRANTD_CHANGES_RETENTION); read the feed again from its start',
    headers: [],
  },
  'payload-too-large': { status: 413, title: 'Payload too large', meaning: 'the body is over 1 MiB', headers: [] },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type', meaning: 'the body is not JSON', headers: [] },
  'check-too-complex': {
    status: 422,
    title: 'Check too complex',
    meaning:
      'answering would take more steps than the work budget of one check: (object, relation) pairs expanded and grants followed, ' +
      '{GRANTD_CHECK_BUDGET} unless GRANTD_CHECK_BUDGET says otherwise; the detail names the budget',
    headers: [],
  },
  'rate-limited': {
    status: 429,
    title: 'Rate limited',
    meaning:
      "the key exceeded its limit of requests a second (GRANTD_RATE_LIMIT), or the client's address its limit of failed " +
      'authentications a second (GRANTD_AUTH_FAILURE_LIMIT); retry after `Retry-After` seconds',
    headers: ['Retry-After'],
  },
  internal: {
    status: 500,
    title: 'Internal error',
    meaning: 'a bug; logged with the request id that the detail quotes, never leaked',
    headers: [],
  },
  unavailable: {
    status: 503,
    title: 'Service unavailable',
    meaning:
      'the database is unreachable, a check or query ran out of time, the tenant has its share of the database connections ' +
      'in use, or a write kept conflicting with concurrent writes; retry after `Retry-After` seconds',
    headers: ['Retry-After'],
  },
} as const satisfies Record<string, ProblemDefinition>;

export type ProblemType = keyof typeof PROBLEMS;
type ProblemTypes = readonly [ProblemType, ...ProblemType[]];

export const ValidationIssueSchema = z.object({
  path: z.string().describe('Where the value failed, e.g. "body.checks.3.subject" or "query.limit"'),
  message: z.string(),
});

/** The RFC 7807 body, its `type` narrowed to the given problem types. */
function problemSchema<const T extends ProblemTypes>(types: T) {
  return z
    .object({
      type: z.enum(types as unknown as [T[number], ...T[number][]]).describe('Short, stable identifier of the problem'),
      title: z.string().describe('Short human-readable summary of the problem type'),
      status: z.number().int().describe('HTTP status of this response'),
      detail: z.string().describe('What went wrong with this request'),
      errors: z.array(ValidationIssueSchema).optional().describe('Validation failures, one per offending value'),
    })
    .describe('RFC 7807 problem');
}

type ProblemSchema = ReturnType<typeof problemSchema<[ProblemType, ...ProblemType[]]>>;
export type Problem = z.infer<ProblemSchema>;

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const c = initContract();

function problemResponse<const T extends ProblemTypes>(types: T) {
  return c.otherResponse({ contentType: PROBLEM_CONTENT_TYPE, body: problemSchema(types) });
}

/** Problems every authenticated /v1 route can answer with. */
export const commonProblems = {
  401: problemResponse(['unauthenticated']),
  403: problemResponse(['insufficient-scope']),
  429: problemResponse(['rate-limited']),
  500: problemResponse(['internal']),
  503: problemResponse(['unavailable']),
};

/** Problems of routes that take a JSON body. */
export const bodyProblems = {
  413: problemResponse(['payload-too-large']),
  415: problemResponse(['unsupported-media-type']),
};

export const badRequest = <const T extends ProblemTypes>(types: T) => ({ 400: problemResponse(types) });
export const notFound = <const T extends ProblemTypes>(types: T) => ({ 404: problemResponse(types) });
/** A check whose walk would exceed the work budget of one check. */
export const tooComplex = { 422: problemResponse(['check-too-complex']) };
/** A feed position whose changes were pruned. */
export const gone = { 410: problemResponse(['changes-expired']) };
export const conflict = <const T extends ProblemTypes>(types: T) => ({ 409: problemResponse(types) });
