import express, { type NextFunction, type Request, type Response } from 'express';
import { isAppRouteNoBody, type AppRoute } from '@ts-rest/core';
import { inSeconds } from '../options.ts';
import { sendProblem } from '../problem.ts';

const BODY_LIMIT_BYTES = 1024 * 1024;

const parseJson = express.json({ limit: BODY_LIMIT_BYTES, strict: true, type: () => true });

/** The Content-Type values the fast path takes (what clients send); any other goes through body-parser. */
const PLAIN_JSON = new Set(['application/json', 'application/json; charset=utf-8', 'application/json;charset=utf-8']);
const UTF8_BOM = 0xfeff;

/** An error as body-parser raises it (with the body's text when it could not be parsed), for the error handler (src/http/middleware/errors.ts) to answer alike. */
const parserError = (type: 'entity.parse.failed' | 'entity.too.large', status: number, message: string, body?: string) =>
  Object.assign(new Error(message), { type, status, body });

/**
 * The fast path: a body that has all arrived with its headers (most do), uncompressed, sent as plain
 * JSON, is taken from the request's buffer and parsed at once, with body-parser's checks (the size
 * limit, strict JSON: an object or array, an empty body read as {}, a byte order mark dropped) and
 * its errors. It spares a check the stream, decoder and content-type parsing body-parser sets up for
 * any body (docs/decisions.md#a-request-pays-for-what-it-needs-and-no-more). Undefined when the
 * request is not one it takes.
 */
function parseArrived(req: Request): { body: unknown } | { error: Error } | undefined {
  if (!req.complete || req.headers['content-encoding'] !== undefined || !PLAIN_JSON.has(req.headers['content-type'] ?? '')) return undefined;
  const chunk = req.read() as Buffer | null;
  const length = chunk?.length ?? 0;
  if (length > BODY_LIMIT_BYTES) return { error: parserError('entity.too.large', 413, 'request entity too large') };
  let text = chunk?.toString('utf8') ?? '';
  if (text.charCodeAt(0) === UTF8_BOM) text = text.slice(1);
  if (text.length === 0) return { body: {} };
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return { error: parserError('entity.parse.failed', 400, 'the body is not a JSON object or array', text) };
  try {
    return { body: JSON.parse(text) as unknown };
  } catch (error) {
    return { error: parserError('entity.parse.failed', 400, (error as Error).message, text) };
  }
}

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
    if (req.complete) return readBody(req, res, next);
    // The headers were handled as soon as they were parsed: the body of the same packet is parsed
    // next, so it has arrived by the time the loop's I/O is done (a body still on its way goes to body-parser).
    setImmediate(readBody, req, res, next);
  };

  function readBody(req: Request, res: Response, next: NextFunction): void {
    const arrived = parseArrived(req);
    if (arrived) {
      if ('error' in arrived) return next(arrived.error);
      req.body = arrived.body;
      return next();
    }
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
  }
}
