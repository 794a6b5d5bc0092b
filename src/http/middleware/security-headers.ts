import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';

const jsonHeaders = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xFrameOptions: { action: 'deny' },
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
});

/**
 * Every answer's security headers: OWASP's set for REST APIs (a CSP and frame options that forbid
 * rendering and framing, nosniff, HSTS, CORP, and no-store, since an authorization answer must not
 * be replayed by a cache). Helmet's headers that only protect HTML documents would add ~500 bytes
 * to each of the API's small answers; the reference pages, the only HTML, add them back
 * (`documentSecurityHeaders`).
 */
export function apiSecurityHeaders(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  jsonHeaders(req, res, next);
}

/** Helmet's defaults, for HTML pages. */
export const documentSecurityHeaders = helmet();
