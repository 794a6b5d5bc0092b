import express, { type NextFunction, type Request, type Response } from 'express';
import { isAppRouteNoBody, type AppRoute } from '@ts-rest/core';
import { sendProblem } from '../problem.ts';

export const BODY_LIMIT_BYTES = 1024 * 1024;

const parseJson = express.json({ limit: BODY_LIMIT_BYTES, strict: true, type: () => true });

const hasBody = (req: Request): boolean =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * Parses the JSON body of routes that take one, after authentication: a body that is not JSON is
 * 415, one over 1 MiB is 413 (raised by the parser), malformed JSON is 400.
 */
export function jsonBody(req: Request & { tsRestRoute: AppRoute }, res: Response, next: NextFunction): void {
  const route = req.tsRestRoute;
  const takesBody = route.method !== 'GET' && 'body' in route && !isAppRouteNoBody(route.body);
  if (!takesBody || !hasBody(req)) return next();
  if (!req.is(['application/json', 'application/*+json'])) {
    return sendProblem(res, 'unsupported-media-type', 'send the body as application/json');
  }
  parseJson(req, res, next);
}
