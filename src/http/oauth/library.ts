import type { RequestHandler } from 'express';
import type Provider from 'oidc-provider';
import { errorPage } from '../../auth/oauth/pages.ts';
import { cookieKeys } from '../../store/oauth-records.ts';
import type { AppDeps } from '../context.ts';
import { resourceIdentifiers } from './protected-resource.ts';
import { sendPage } from './responses.ts';

export interface OAuthOptions {
  /** The issuer (GRANTD_PUBLIC_URL), without a trailing slash. */
  publicUrl: string;
  /** Access token lifetime in seconds (GRANTD_OAUTH_ACCESS_TTL). */
  accessTtlSeconds: number;
}

/** The library, made when the first OAuth request arrives (its cookie keys come from the database). */
export type ProviderSource = () => Promise<Provider>;

// Imported when first used, not by the modules every CLI command loads: the library warns on Node.js
// 20 as it loads, which grantd import or tenant create would print though neither serves OAuth. A
// serving node has loaded it before it listens (src/cli/serve.ts).
const providerModule = () => import('../../auth/oauth/provider.ts');
const seamsModule = () => import('../../auth/oauth/library-seams.ts');

export function providerSource(deps: AppDeps, options: OAuthOptions): ProviderSource {
  let made: Promise<Provider> | null = null;
  return () => {
    made ??= Promise.all([cookieKeys(deps.db), providerModule()]).then(([keys, { createOAuthProvider }]) =>
      createOAuthProvider({
        db: deps.db,
        issuer: options.publicUrl,
        accessTtl: options.accessTtlSeconds,
        cookieKeys: keys,
        resources: resourceIdentifiers(options.publicUrl),
        perClientLimit: deps.limits.perKey ? (clientId) => deps.limits.perKey!.take(clientId) : undefined,
        hooks: {
          bearerEnded: () => deps.announce({ kind: 'keys' }),
          sweepFailed: (error) => deps.logger.warn({ err: { message: (error as Error)?.message } }, 'expired OAuth records could not be deleted'),
        },
      }),
    );
    made.catch(() => (made = null));
    return made;
  };
}

/** Answers a request with the library itself, at the issuer's origin. */
export function libraryRoute(provider: ProviderSource, publicUrl: string): RequestHandler {
  const issuer = new URL(publicUrl);
  let callback: ReturnType<Provider['callback']> | null = null;
  return (req, res, next) => {
    // The library stores an authorization request's parameters as they came, and PostgreSQL's text
    // cannot hold U+0000: such a request is refused here, as the library refuses other bad ones.
    if (req.method === 'GET' && /%00/i.test(req.originalUrl)) {
      return sendPage(res, 400, errorPage('invalid_request', 'A parameter of this request holds a character that is not allowed (NUL).'));
    }
    // grantd is reached at its public URL: the library advertises and redirects to that origin.
    req.headers['x-forwarded-host'] = issuer.host;
    req.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
    seamsModule()
      .then(({ throughLibrary }) => throughLibrary(() => provider().then((p) => (callback ??= p.callback())(req, res))))
      .catch(next);
  };
}
