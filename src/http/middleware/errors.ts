import type { NextFunction, Request, Response } from 'express';
import type { RequestValidationError } from '@ts-rest/express';
import type { Logger } from 'pino';
import type { ZodIssue } from 'zod';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { explainRef, type ProblemType } from '../../../contract/index.ts';
import { DomainError, RetryLater } from '../../errors.ts';
import { storeFailureOf, type StoreFailure } from '../../store/errors.ts';
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

/** The lists of a batch, whose items problems name as `writes[3].object` (docs/errors.md#problems-of-a-batch). */
const BATCH_LISTS = new Set<unknown>(['writes', 'deletes']);

/** Where a schema failure lies: `body.relation`, `query.limit`, or for an item of a batch `writes[3].object` (and for the list `writes`). */
function issuePath(where: string, path: (string | number)[]): string {
  const [list, index, ...rest] = path;
  if (where === 'body' && BATCH_LISTS.has(list)) {
    return typeof index === 'number' ? [`${String(list)}[${index}]`, ...rest].join('.') : path.join('.');
  }
  return [where, ...path].join('.');
}

/** The value a failure is about, read from the request where the schema found it. */
export function valueAt(root: unknown, path: (string | number)[]): unknown {
  return path.reduce<unknown>(
    (value, key) => (value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined),
    root,
  );
}

/** An issue's message; for a malformed subject or object, what is wrong with it and the rule. */
function issueMessage(issue: ZodIssue, value: unknown): string {
  const explained = refProblem(issue) && issue.path.at(-1) !== 'owner' && typeof value === 'string' ? explainRef(value) : undefined;
  return explained ?? issue.message;
}

/** Schema failures of ts-rest's request validation, as one problem listing every failure. */
export function validationProblem(err: RequestValidationError, req: Request, res: Response, _next: NextFunction): void {
  const parts = [
    ['path', err.pathParams, req.params],
    ['query', err.query, req.query],
    ['header', err.headers, req.headers],
    ['body', err.body, req.body],
  ] as const;
  const failures = parts.flatMap(([where, error, given]) =>
    (error?.issues ?? []).map((issue) => ({ issue, where, value: valueAt(given, issue.path) })),
  );
  const { type, detail, errors } = schemaProblem(failures);
  sendProblem(res, type, detail, errors);
}

/**
 * Schema failures (each with where it was: path, query, header or body, and the value it was about)
 * as the problem that tells them; a handler's own parse throws it too.
 */
export function schemaProblem(failures: { issue: ZodIssue; where: string; value?: unknown }[]): DomainError {
  const issues = failures.map(({ issue, where, value }) => ({ issue, path: issuePath(where, issue.path), message: issueMessage(issue, value) }));
  const refTypes = issues.map(({ issue }) => refProblem(issue));
  const type = refTypes.length > 0 && refTypes.every((t) => t !== undefined) ? refTypes[0]! : 'invalid-request';
  const errors = issues.map(({ path, message }) => ({ path, message }));
  const first = errors[0];
  return new DomainError(type, first ? `${first.path}: ${first.message}` : 'the request does not match the schema', errors);
}

/**
 * What is wrong with a body the JSON parser refused: not JSON, or JSON that is not an object or array
 * (`null`, `5`, `"x"`, `true`: the parser is strict). Only a body not starting with { or [ is parsed again.
 */
function unparsedBodyProblem(text: unknown): string {
  if (typeof text === 'string' && !/^\s*[{[]/.test(text)) {
    try {
      const value: unknown = JSON.parse(text);
      return `the body must be a JSON object, not ${value === null ? 'null' : `a ${typeof value}`}`;
    } catch {
      // Not JSON either.
    }
  }
  const where = typeof text === 'string' ? whereJsonFails(text) : undefined;
  return where ? `the body is not valid JSON: ${where}` : 'the body is not valid JSON';
}

/**
 * Where JSON the parser refused goes wrong, told without quoting it (it may hold a secret): Node's
 * JSON.parse names no position for an unexpected token, and quotes the body, so jsonc-parser,
 * strict as JSON, finds the first error.
 */
function whereJsonFails(text: string): string | undefined {
  const errors: ParseError[] = [];
  parseJsonc(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (!first) return undefined;
  const before = text.slice(0, first.offset);
  const line = before.split('\n').length;
  const column = first.offset - before.lastIndexOf('\n');
  const what = printParseErrorCode(first.error)
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
  return `${what} at line ${line}, column ${column}`;
}

/**
 * The last error handler: every error leaves as a problem, never a stack trace or SQL. `challenge`
 * gives the WWW-Authenticate a 401 to the request carries: a handler answers one when the credential it runs on was
 * revoked while it ran (authorityOf in src/store/authority.ts).
 */
export function errorHandler(logger: Logger, challenge: (req: Request) => string) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    if (res.headersSent) return;
    if (error instanceof RetryLater) {
      logger.warn({ reqId: req.id, reason: error.reason }, 'request refused for now');
      res.setHeader('Retry-After', '1');
      return sendProblem(res, error.type, error.detail);
    }
    if (error instanceof DomainError) {
      if (error.type === 'unauthenticated') res.setHeader('WWW-Authenticate', `${challenge(req)}, error="invalid_token"`);
      return sendProblem(res, error.type, error.detail, error.errors);
    }
    const parserError = error as { type?: string; status?: number };
    switch (parserError.type) {
      case 'entity.too.large':
        return sendProblem(res, 'payload-too-large', 'the body is larger than 1 MiB');
      case 'entity.parse.failed':
        return sendProblem(res, 'invalid-request', unparsedBodyProblem((error as { body?: unknown }).body));
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return sendProblem(res, 'unsupported-media-type', 'send the body as UTF-8 JSON');
    }
    // Express's router could not decode a path parameter (a stray or invalid % escape).
    if (error instanceof URIError) return sendProblem(res, 'invalid-request', 'the path is not valid percent-encoding');
    if (typeof parserError.status === 'number' && parserError.status >= 400 && parserError.status < 500) {
      return sendProblem(res, 'invalid-request', 'the request body could not be read');
    }
    const problem = unexpectedProblem(error, logger, req.id);
    if (problem.type === 'unavailable') res.setHeader('Retry-After', '1');
    sendProblem(res, problem.type, problem.detail);
  };
}

/**
 * An error no DomainError, as the problem it is told as, logged here: a failure of the database as
 * `unavailable`, anything else as `internal` (never its message, which may hold SQL or a stack).
 */
export function unexpectedProblem(error: unknown, logger: Logger, reqId: string | undefined): DomainError {
  const failure = storeFailureOf(error);
  if (failure) {
    const { log, detail } = STORE_FAILURES[failure];
    logger.warn({ reqId, err: describe(error) }, log);
    return new DomainError('unavailable', detail);
  }
  logger.error({ reqId, err: error }, 'unhandled error');
  return new DomainError('internal', `an internal error occurred; quote request id ${reqId ?? 'unknown'} when reporting it`);
}

/** How each failure of the database is logged and told: all 503 `unavailable`, never an outage but for an outage. */
const STORE_FAILURES: Record<StoreFailure, { log: string; detail: string }> = {
  'write-conflict': { log: 'write conflict outlasted its retries', detail: 'the write kept conflicting with concurrent writes; retry it' },
  cancelled: { log: 'query cancelled after its time limit', detail: 'the query was cancelled after its time limit; retry it, or narrow the request' },
  unavailable: { log: 'database unavailable', detail: 'the database is unreachable; retry shortly' },
};

const describe = (error: unknown) => {
  const e = error as { name?: string; code?: string };
  return { name: e?.name, code: e?.code };
};

export function notFound(req: Request, res: Response): void {
  sendProblem(res, 'not-found', `no route ${req.method} ${shownPath(req.path)}`);
}
