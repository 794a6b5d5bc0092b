import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { sendProblem } from '../problem.ts';

/**
 * Per-key token buckets: each key may burst up to a second's worth of requests and is refilled at
 * `perSecond` tokens a second; one noisy key never throttles another. One set per node: with
 * several workers, the primary holds it.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = Date.now();

  /** A bucket holds a second's worth of tokens, and at least one. */
  private readonly capacity: number;

  constructor(private readonly perSecond: number) {
    this.capacity = Math.max(1, perSecond);
  }

  /** Takes a token for the key; returns 0 when granted, else the seconds until one is available. */
  take(key: string, now = Date.now()): number {
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.capacity, at: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
  }

  /** Full buckets carry no information: drop them now and then so that the map stays small. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 10_000) return;
    this.lastSweep = now;
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond >= this.capacity) this.buckets.delete(key);
    }
  }
}

/** Answers 429 past the key's limit; `take` asks the node's token buckets (see RateLimiter.take). */
export function rateLimit(perSecond: number, take: (keyId: string) => number | Promise<number>): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    const wait = req.principal ? await take(req.principal.keyId) : 0;
    if (wait === 0) return next();
    res.setHeader('Retry-After', String(wait));
    sendProblem(res, 'rate-limited', `this key is limited to ${perSecond} requests a second; retry in ${wait} s`);
  };
}
