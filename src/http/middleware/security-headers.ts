import type { ServerResponse } from 'node:http';
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
 * The headers `jsonHeaders` sets, read from helmet once: with static directives they are the same
 * for every answer, and setting them from this list costs a check a fraction of running helmet's
 * middleware per header (docs/decisions.md#api-answers-carry-a-small-set-of-security-headers).
 */
const API_HEADERS: readonly (readonly [string, string])[] = (() => {
  const headers: [string, string][] = [['Cache-Control', 'no-store']];
  const recorder = { setHeader: (name: string, value: string) => headers.push([name, value]), removeHeader: () => undefined };
  let done = false;
  jsonHeaders({} as never, recorder as never, () => (done = true));
  // Helmet answers synchronously; a version that did not would leave answers without their headers.
  if (!done) throw new Error('helmet did not set its headers synchronously');
  return headers;
})();

/**
 * Every answer's security headers: OWASP's set for REST APIs (a CSP and frame options that forbid
 * rendering and framing, nosniff, HSTS, CORP, and no-store, since an authorization answer must not
 * be replayed by a cache). Helmet's headers that only protect HTML documents would add ~500 bytes
 * to each of the API's small answers; the reference pages, the only HTML, add them back
 * (`documentSecurityHeaders`).
 */
export function setApiSecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of API_HEADERS) res.setHeader(name, value);
}

/** Helmet's defaults, for HTML pages. */
export const documentSecurityHeaders = helmet();
