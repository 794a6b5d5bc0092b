import { initContract } from '@ts-rest/core';
import { z } from 'zod';

/** Every problem type grantd answers with, and its HTTP status (docs/errors.md#problem-types). */
export const PROBLEM_STATUS = {
  'invalid-request': 400,
  'invalid-subject': 400,
  'invalid-object': 400,
  'unknown-relation': 400,
  'invalid-namespace': 400,
  'invalid-cursor': 400,
  unauthenticated: 401,
  'insufficient-scope': 403,
  'not-found': 404,
  'namespace-not-found': 404,
  'agent-not-found': 404,
  'key-not-found': 404,
  'namespace-exists': 409,
  'agent-exists': 409,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'check-too-complex': 422,
  'rate-limited': 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ProblemType = keyof typeof PROBLEM_STATUS;
type ProblemTypes = readonly [ProblemType, ...ProblemType[]];

export const ValidationIssueSchema = z.object({
  path: z.string().describe('Where the value failed, e.g. "body.checks.3.subject" or "query.limit"'),
  message: z.string(),
});

/** The RFC 7807 body, its `type` narrowed to the given problem types. */
export function problemSchema<const T extends ProblemTypes>(types: T) {
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

export const ProblemSchema = problemSchema(Object.keys(PROBLEM_STATUS) as unknown as [ProblemType, ...ProblemType[]]);
export type Problem = z.infer<typeof ProblemSchema>;

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
export const conflict = <const T extends ProblemTypes>(types: T) => ({ 409: problemResponse(types) });
