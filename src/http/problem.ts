import type { Response } from 'express';
import { PROBLEM_CONTENT_TYPE, PROBLEMS, type Problem, type ProblemType } from '../../contract/index.ts';

export function problemBody(type: ProblemType, detail: string, errors?: Problem['errors']): Problem {
  const { title, status } = PROBLEMS[type];
  return { type, title, status, detail, ...(errors ? { errors } : {}) };
}

export function sendProblem(res: Response, type: ProblemType, detail: string, errors?: Problem['errors']): void {
  const body = problemBody(type, detail, errors);
  // For the request's log line (src/http/middleware/request-log.ts).
  res.locals.problemType = type;
  res.status(body.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
}
