import type { NextFunction, Request, Response } from 'express';
import { digestsEqual, hashSecret } from '../../auth/secrets.ts';
import { sendProblem } from '../problem.ts';
import { BEARER } from './authenticate.ts';

/**
 * Guards GET /metrics with GRANTD_METRICS_TOKEN as a bearer credential. The digests of the given
 * and the configured token are compared in constant time, so the time taken tells nothing of either.
 */
export function requireMetricsToken(token: string) {
  const expected = hashSecret(token);
  return (req: Request, res: Response, next: NextFunction): void => {
    const match = BEARER.exec(req.headers.authorization ?? '');
    if (match && digestsEqual(hashSecret(match[1]!), expected)) return next();
    res.setHeader('WWW-Authenticate', match ? 'Bearer realm="grantd-metrics", error="invalid_token"' : 'Bearer realm="grantd-metrics"');
    sendProblem(res, 'unauthenticated', match ? 'the metrics token is wrong' : 'send the metrics token as Authorization: Bearer <token>');
  };
}
