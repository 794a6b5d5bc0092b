import type { Response } from 'express';
import { PROBLEM_CONTENT_TYPE, PROBLEM_STATUS, type Problem, type ProblemType } from '../../contract/index.ts';

const TITLES: Record<ProblemType, string> = {
  'invalid-request': 'Invalid request',
  'invalid-subject': 'Invalid subject',
  'invalid-object': 'Invalid object',
  'unknown-relation': 'Unknown relation',
  'invalid-namespace': 'Invalid namespace definition',
  'invalid-cursor': 'Invalid cursor',
  unauthenticated: 'Unauthenticated',
  'insufficient-scope': 'Insufficient scope',
  'not-found': 'Not found',
  'namespace-not-found': 'Namespace not found',
  'agent-not-found': 'Agent not found',
  'key-not-found': 'Key not found',
  'namespace-exists': 'Namespace exists',
  'agent-exists': 'Agent exists',
  'payload-too-large': 'Payload too large',
  'unsupported-media-type': 'Unsupported media type',
  'check-too-complex': 'Check too complex',
  'rate-limited': 'Rate limited',
  internal: 'Internal error',
  unavailable: 'Service unavailable',
};

export function problemBody(type: ProblemType, detail: string, errors?: Problem['errors']): Problem {
  return { type, title: TITLES[type], status: PROBLEM_STATUS[type], detail, ...(errors ? { errors } : {}) };
}

export function sendProblem(res: Response, type: ProblemType, detail: string, errors?: Problem['errors']): void {
  const body = problemBody(type, detail, errors);
  res.status(body.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}
