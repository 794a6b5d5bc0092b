import express, { type NextFunction, type Request, type Response } from 'express';
import { isAppRouteNoBody, type AppRoute } from '@ts-rest/core';
import { inSeconds } from '../options.ts';
import { sendProblem } from '../problem.ts';

const BODY_LIMIT_BYTES = 1024 * 1024;

const parseJson = express.json({ limit: BODY_LIMIT_BYTES, strict: true, type: () => true });

const hasBody = (req: Request): boolean => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/**
 * Parses the JSON body of routes that take one, after authentication: a body that is not JSON is
 * 415, one over 1 MiB is 413 (raised by the parser), malformed JSON is 400, and one that has not
 * all arrived within `timeoutMs` is 400 and closes the connection, so that a client sending slowly
 * holds neither the request nor its connection past that.
 */
export function jsonBody(timeoutMs: number) {
  return (req: Request & { tsRestRoute: AppRoute }, res: Response, next: NextFunction): void => {
    const route = req.tsRestRoute;
    const takesBody = route.method !== 'GET' && 'body' in route && !isAppRouteNoBody(route.body);
    if (!takesBody || !hasBody(req)) return next();
    if (!req.is(['application/json', 'application/*+json'])) {
      return sendProblem(res, 'unsupported-media-type', 'send the body as application/json');
    }
    // A body that has all arrived (most do, with their headers) needs no deadline: no timer to set and clear.
    const deadline = req.complete
      ? undefined
      : setTimeout(() => {
          res.setHeader('Connection', 'close');
          sendProblem(res, 'invalid-request', `the body did not arrive within ${inSeconds(timeoutMs)}`);
        }, timeoutMs);
    parseJson(req, res, (error?: unknown) => {
      clearTimeout(deadline);
      // Past the deadline the answer is sent; the parser then ends with the closed connection.
      if (!res.headersSent) next(error);
    });
  };
}
