import type { Request, Response, Router } from 'express';
import { KEY_SCOPES } from '../../../contract/index.ts';
import { exactRouter } from '../options.ts';

/** RFC 9728 3: a resource's metadata is at this path, followed by the resource's own path. */
export const PROTECTED_RESOURCE_METADATA = '/.well-known/oauth-protected-resource';

/**
 * The protected resources grantd serves (docs/oauth.md#protected-resources): the whole server (''),
 * the API and the MCP endpoint, each named by its path under the issuer. A request's resource is
 * that of its path prefix; a token bound to one is refused by the other.
 */
const RESOURCES = {
  '': { scopes: KEY_SCOPES },
  '/v1': { scopes: KEY_SCOPES },
  // What an MCP client asks for by default: admin is never offered there.
  '/mcp': { scopes: KEY_SCOPES.filter((scope) => scope !== 'admin') },
} as const;
type ResourcePath = keyof typeof RESOURCES;

/** The resource identifiers (RFC 8707) grantd accepts: `<issuer>`, `<issuer>/v1`, `<issuer>/mcp`. */
export const resourceIdentifiers = (issuer: string): string[] => Object.keys(RESOURCES).map((path) => `${issuer}${path}`);

/** The resource a request to `path` is for: /mcp and below is the MCP endpoint's, anything else the API's. */
const resourcePathOf = (path: string): ResourcePath => (path === '/mcp' || path.startsWith('/mcp/') ? '/mcp' : '/v1');

/** A request's protected resource: its identifier and the URL of its metadata document. */
export function protectedResourceOf(issuer: string, path: string): { resource: string; metadata: string } {
  const own = resourcePathOf(path);
  return { resource: `${issuer}${own}`, metadata: `${issuer}${PROTECTED_RESOURCE_METADATA}${own}` };
}

/**
 * The three RFC 9728 documents, each at the well-known path followed by its resource's path so that
 * a client's strict discovery finds `resource` equal to the identifier it asked about. Readable from
 * any origin: browser-based MCP clients discover from them.
 */
export function protectedResourceRoutes(issuer: string): Router {
  const router = exactRouter();
  const anyOrigin = (res: Response) => res.setHeader('Access-Control-Allow-Origin', '*');
  for (const [path, { scopes }] of Object.entries(RESOURCES)) {
    const at = `${PROTECTED_RESOURCE_METADATA}${path}`;
    router.get(at, (_req: Request, res: Response) => {
      anyOrigin(res);
      res.json({
        resource: `${issuer}${path}`,
        authorization_servers: [issuer],
        scopes_supported: scopes,
        bearer_methods_supported: ['header'],
        resource_documentation: `${issuer}/docs`,
      });
    });
    router.options(at, (_req: Request, res: Response) => {
      anyOrigin(res);
      res.setHeader('Access-Control-Allow-Methods', 'GET');
      res.setHeader('Access-Control-Allow-Headers', '*');
      res.setHeader('Access-Control-Max-Age', '86400');
      res.status(204).end();
    });
  }
  return router;
}
