import type { Request, RequestHandler, Response } from 'express';
import type { Limit } from '../../rate-limits.ts';
import { principalOf } from '../context.ts';
import { sendProblem } from '../problem.ts';

/** 429 `rate-limited` with Retry-After in whole seconds. */
export function sendRateLimited(res: Response, seconds: number, detail: string): void {
  res.setHeader('Retry-After', String(seconds));
  sendProblem(res, 'rate-limited', `${detail}; retry in ${seconds} s`);
}

/** Answers 429 past the key's limit (GRANTD_RATE_LIMIT): one noisy key never throttles another. */
export function rateLimit(limit: Limit): RequestHandler {
  return async (req: Request, res: Response, next) => {
    const wait = await limit.take(principalOf(req).keyId);
    if (wait === 0) return next();
    sendRateLimited(res, wait, `this key is limited to ${limit.describe('requests')}`);
  };
}
