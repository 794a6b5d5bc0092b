import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { DomainError } from '../../errors.ts';
import { getAgent } from '../../store/agents.ts';
import { createOAuthClient, deleteOAuthClient, listOAuthClients } from '../../store/oauth-clients.ts';
import { oauthClientBody } from '../bodies.ts';
import { principalOf, type AppDeps } from '../context.ts';

const s = initServer();

const invalid = (path: string, message: string) => new DomainError('invalid-request', `${path}: ${message}`, [{ path, message }]);

export const oauthClientRoutes = ({ db }: AppDeps) =>
  s.router(contract.oauth.clients, {
    create: async ({ body, req }) => {
      const principal = principalOf(req);
      const { tenantId } = principal;
      const redirectUris = body.redirect_uris ?? [];
      if (body.type === 'public' && redirectUris.length === 0) {
        throw invalid('body.redirect_uris', 'a public client uses the authorization code flow only, which needs a redirect URI');
      }
      if (body.agent !== undefined) {
        if (body.type !== 'confidential') throw invalid('body.agent', "an agent's client must be confidential (it uses client_credentials)");
        if (redirectUris.length > 0)
          throw invalid('body.redirect_uris', "an agent's client uses client_credentials only, which takes no redirect URI");
        if (!(await getAgent(db, tenantId, body.agent))) throw new DomainError('agent-not-found', `agent ${body.agent} is not registered`);
      }
      const { row, secret } = await createOAuthClient(db, principal, {
        name: body.name,
        type: body.type,
        redirectUris,
        scopes: body.scopes,
        agent: body.agent ?? null,
      });
      return { status: 201, body: { ...oauthClientBody(row), ...(secret === null ? {} : { client_secret: secret }) } };
    },
    list: async ({ req }) => {
      const rows = await listOAuthClients(db, principalOf(req).tenantId);
      return { status: 200, body: { clients: rows.map(oauthClientBody) } };
    },
    delete: async ({ params, req }) => {
      const { tenantId } = principalOf(req);
      if (!(await deleteOAuthClient(db, tenantId, params.client_id))) {
        throw new DomainError('client-not-found', `no OAuth client ${params.client_id.slice(0, 128)}`);
      }
      return { status: 204, body: undefined };
    },
  });
