import express, { type Request, type Response, type Router } from 'express';
import type { z } from 'zod';
import {
  contract,
  DEFAULT_REGISTERED_SCOPE,
  type ClientRegistrationSchema,
  type KeyScope,
  type RegistrationErrorSchema,
} from '../../../contract/index.ts';
import { registerDynamicClient, type OAuthClientRow } from '../../store/oauth-clients.ts';
import { clientAddress } from '../client-address.ts';
import type { AppDeps } from '../context.ts';
import { exactRouter } from '../options.ts';

type RegistrationError = z.infer<typeof RegistrationErrorSchema>;

/** Client metadata is a few short fields: a larger body is refused before it is parsed. */
const parseJson = express.json({ limit: '16kb', strict: true });

/** RFC 7591 3.2.2: every answer of the endpoint is JSON that no cache keeps. */
function answer(res: Response, status: number, body: z.input<typeof ClientRegistrationSchema> | RegistrationError): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  res.status(status).json(body);
}

/** The JSON body, or undefined when it is none (another content type, malformed or too large JSON). */
function readJson(req: Request, res: Response): Promise<unknown> {
  return new Promise((resolve) => parseJson(req, res, (error) => resolve(error ? undefined : (req.body as unknown))));
}

/**
 * The RFC 7591 error for the first issue: invalid_redirect_uri for a redirect URI, else
 * invalid_client_metadata, each naming the field and what is wrong with it.
 */
function refusalOf(issues: z.ZodIssue[]): RegistrationError {
  const issue = issues[0]!;
  const field = issue.path.join('.') || 'body';
  const error = issue.path[0] === 'redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata';
  return { error, error_description: `${field}: ${issue.message}` };
}

/**
 * RFC 7591 3.2.1: the client as registered. Its grant types are always both: a client that asked
 * for authorization_code alone gets refresh tokens too, which it may leave unused (3.2.1 lets the
 * server replace a requested value).
 */
function registered(row: OAuthClientRow): z.input<typeof ClientRegistrationSchema> {
  return {
    client_id: row.clientId,
    client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
    client_name: row.name,
    redirect_uris: row.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    scope: row.scopes.join(' '),
  };
}

/**
 * Open dynamic client registration (RFC 7591, docs/oauth.md#dynamic-client-registration): a public
 * client of the authorization code flow, of no tenant until its first consent binds it. Each
 * registration takes a point of its client address first (GRANTD_REGISTER_LIMIT an hour).
 */
export function registrationRoutes(deps: AppDeps): Router {
  const router = exactRouter();
  const route = contract.oauth.register;
  const { registrations } = deps.limits;
  router.post(route.path, async (req, res, next) => {
    try {
      const wait = await registrations.take(clientAddress(req.ip));
      if (wait > 0) {
        res.setHeader('Retry-After', String(wait));
        return answer(res, 429, {
          error: 'temporarily_unavailable',
          error_description: `too many registrations from this address (${registrations.describe('registrations')}); try again in ${wait} s`,
        });
      }
      const body = await readJson(req, res);
      if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
        return answer(res, 400, {
          error: 'invalid_client_metadata',
          error_description: 'the client metadata must be a JSON object (application/json)',
        });
      }
      const parsed = route.body.safeParse(body);
      if (!parsed.success) return answer(res, 400, refusalOf(parsed.error.issues));
      const metadata = parsed.data;
      const row = await registerDynamicClient(deps.db, {
        // A name the person can tell the application by; the consent page names its redirect host too.
        name: metadata.client_name ?? new URL(metadata.redirect_uris[0]!).host,
        redirectUris: metadata.redirect_uris,
        scopes: (metadata.scope ?? DEFAULT_REGISTERED_SCOPE).split(' ') as KeyScope[],
      });
      answer(res, 201, registered(row));
    } catch (error) {
      next(error);
    }
  });
  return router;
}
