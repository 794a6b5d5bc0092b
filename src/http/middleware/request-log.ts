import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { shownPath } from '../shown-path.ts';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives each request an id (the caller's X-Request-Id when sane), echoes it, and logs one line per
 * request: with the caller's tenant once authenticated, and for a problem answer its type.
 */
export function requestLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const given = req.headers['x-request-id'];
    req.id = typeof given === 'string' && ACCEPTABLE_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    if (!logger.isLevelEnabled('info')) return next();
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      logger.info(
        {
          reqId: req.id,
          method: req.method,
          path: shownPath(req.path),
          status: res.statusCode,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          key: req.principal?.keyId,
          tenant: req.principal?.tenantId,
          problem: res.statusCode >= 400 ? (res.locals.problemType as string | undefined) : undefined,
        },
        'request',
      );
    });
    next();
  };
}
