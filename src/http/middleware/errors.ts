import type { NextFunction, Request, Response } from 'express';
import type { RequestValidationError } from '@ts-rest/express';
import type { Logger } from 'pino';
import type { ZodIssue } from 'zod';
import type { ProblemType } from '../../../contract/index.ts';
import { DomainError, RetryLater } from '../../errors.ts';
import { CANCELLED } from '../../store/graph-statements.ts';
import { isWriteConflict, sqlStateOf } from '../../store/transaction.ts';
import { sendProblem } from '../problem.ts';
import { shownPath } from '../shown-path.ts';

/** Fields whose malformed value has its own problem type (docs/errors.md#invalid-subject). */
const REF_FIELDS = new Map<unknown, ProblemType>([
  ['subject', 'invalid-subject'],
  ['owner', 'invalid-subject'],
  ['object', 'invalid-object'],
]);

function refProblem(issue: ZodIssue): ProblemType | undefined {
  return issue.code === 'invalid_string' ? REF_FIELDS.get(issue.path.at(-1)) : undefined;
}

/** Schema failures of ts-rest's request validation, as one problem listing every failure. */
export function validationProblem(err: RequestValidationError, _req: Request, res: Response, _next: NextFunction): void {
  const parts = [
    ['path', err.pathParams],
    ['query', err.query],
    ['header', err.headers],
    ['body', err.body],
  ] as const;
  const issues = parts.flatMap(([where, error]) =>
    (error?.issues ?? []).map((issue) => ({ issue, path: [where, ...issue.path].join('.') })),
  );
  const refTypes = issues.map(({ issue }) => refProblem(issue));
  const type = refTypes.length > 0 && refTypes.every((t) => t !== undefined) ? refTypes[0]! : 'invalid-request';
  const errors = issues.map(({ issue, path }) => ({ path, message: issue.message }));
  const first = errors[0];
  sendProblem(res, type, first ? `${first.path}: ${first.message}` : 'the request does not match the schema', errors);
}

/** Prisma's codes for an unreachable, closed, timed-out or overloaded database or transaction. */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
/** SQLSTATEs of connection failures (class 08), shutdowns (57P01-57P03) and exhaustion (53xxx). */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123]|53)/;
const UNAVAILABLE_MESSAGE =
  /not queryable|Connection terminated|connection error|timeout exceeded when trying to connect|Can't reach database|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Query read timeout/i;

/**
 * Errors a database outage surfaces as, from the driver, the pool or Prisma (whose driver-adapter
 * errors carry the SQLSTATE in `meta.driverAdapterError.cause`): answered 503, never 500.
 */
function isUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const e = error as { code?: unknown; name?: string; message?: string; cause?: unknown };
  if (e.name === 'PrismaClientInitializationError') return true;
  const code = typeof e.code === 'string' ? e.code : '';
  const sqlState = sqlStateOf(error) ?? code;
  if (UNAVAILABLE_PRISMA_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(sqlState) || UNAVAILABLE_MESSAGE.test(e.message ?? '')) return true;
  return isUnavailable(e.cause, depth + 1);
}

/** Whether PostgreSQL cancelled a statement (its time limit, or an operator), as pg or Prisma reports it. */
function isCancelledStatement(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const e = error as { code?: unknown; cause?: unknown };
  if ((sqlStateOf(error) ?? e.code) === CANCELLED) return true;
  return isCancelledStatement(e.cause, depth + 1);
}

/** The last error handler: every error leaves as a problem, never a stack trace or SQL. */
export function errorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    if (res.headersSent) return;
    if (error instanceof RetryLater) {
      logger.warn({ reqId: req.id, reason: error.reason }, 'request refused for now');
      res.setHeader('Retry-After', '1');
      return sendProblem(res, error.type, error.detail);
    }
    if (error instanceof DomainError) return sendProblem(res, error.type, error.detail, error.errors);
    const parserError = error as { type?: string; status?: number };
    switch (parserError.type) {
      case 'entity.too.large':
        return sendProblem(res, 'payload-too-large', 'the body is larger than 1 MiB');
      case 'entity.parse.failed':
        return sendProblem(res, 'invalid-request', 'the body is not valid JSON');
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return sendProblem(res, 'unsupported-media-type', 'send the body as UTF-8 JSON');
    }
    // Express's router could not decode a path parameter (a stray or invalid % escape).
    if (error instanceof URIError) return sendProblem(res, 'invalid-request', 'the path is not valid percent-encoding');
    if (typeof parserError.status === 'number' && parserError.status >= 400 && parserError.status < 500) {
      return sendProblem(res, 'invalid-request', 'the request body could not be read');
    }
    if (isWriteConflict(error)) {
      logger.warn({ reqId: req.id, err: describe(error) }, 'write conflict outlasted its retries');
      res.setHeader('Retry-After', '1');
      return sendProblem(res, 'unavailable', 'the write kept conflicting with concurrent writes; retry it');
    }
    if (isCancelledStatement(error)) {
      logger.warn({ reqId: req.id, err: describe(error) }, 'query cancelled after its time limit');
      res.setHeader('Retry-After', '1');
      return sendProblem(res, 'unavailable', 'the query was cancelled after its time limit; retry it, or narrow the request');
    }
    if (isUnavailable(error)) {
      logger.warn({ reqId: req.id, err: describe(error) }, 'database unavailable');
      res.setHeader('Retry-After', '1');
      return sendProblem(res, 'unavailable', 'the database is unreachable; retry shortly');
    }
    logger.error({ reqId: req.id, err: error }, 'unhandled error');
    sendProblem(res, 'internal', `an internal error occurred; quote request id ${req.id ?? 'unknown'} when reporting it`);
  };
}

const describe = (error: unknown) => {
  const e = error as { name?: string; code?: string };
  return { name: e?.name, code: e?.code };
};

export function notFound(req: Request, res: Response): void {
  sendProblem(res, 'not-found', `no route ${req.method} ${shownPath(req.path)}`);
}
