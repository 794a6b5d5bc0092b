import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { newRequestId } from '../request-ids.ts';
import { shownPath } from '../shown-path.ts';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives each request an id (the caller's X-Request-Id when sane), echoes it, and logs one line per
 * request: with the caller's tenant once authenticated, and for a problem answer its type. A hook
 * of the app's one per-request middleware (src/http/app.ts); the line is written by one listener
 * shared by all requests, so a request allocates no closure for it.
 */
export function requestLog(logger: Logger): (req: Request, res: Response) => void {
  function logFinished(this: Response): void {
    const req = this.req;
    logger.info(
      {
        reqId: req.id,
        method: req.method,
        path: shownPath(req.path),
        status: this.statusCode,
        ms: performance.now() - req.startedAt!,
        key: req.principal?.keyId,
        tenant: req.principal?.tenantId,
        problem: this.statusCode >= 400 ? (this.locals.problemType as string | undefined) : undefined,
      },
      'request',
    );
  }
  return (req, res) => {
    const given = req.headers['x-request-id'];
    req.id = typeof given === 'string' && ACCEPTABLE_ID.test(given) ? given : newRequestId();
    res.setHeader('X-Request-Id', req.id);
    if (logger.isLevelEnabled('info')) res.on('finish', logFinished);
  };
}
