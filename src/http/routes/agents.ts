import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { DomainError } from '../../errors.ts';
import { createAgent, deleteAgent, getAgent, listAgents } from '../../store/agents.ts';
import { agentBody } from '../bodies.ts';
import { principalOf, type AppDeps } from '../context.ts';
import { decodeStringTuple, keysetPage } from '../cursor.ts';
import { changedNothing } from '../write-obligations.ts';

const s = initServer();

const notFound = (id: string) => new DomainError('agent-not-found', `agent ${id} is not registered`);

export const agentRoutes = ({ db }: AppDeps) =>
  s.router(contract.agents, {
    create: async ({ body, req }) => {
      const { tenantId } = principalOf(req);
      const agent = await createAgent(db, tenantId, {
        externalId: body.external_id,
        displayName: body.display_name ?? null,
        owner: body.owner ?? null,
        scope: [...new Set(body.scope)],
      });
      return { status: 201, body: agentBody(agent) };
    },
    list: async ({ query, req }) => {
      const { tenantId, cursorSecret } = principalOf(req);
      const binding = ['agents'];
      const after = decodeStringTuple(cursorSecret, binding, query.cursor, 1)?.[0] ?? null;
      const rows = await listAgents(db, tenantId, after, query.limit + 1);
      const page = keysetPage(cursorSecret, binding, rows, query.limit, (agent) => [agent.externalId]);
      return { status: 200, body: { agents: page.rows.map(agentBody), next_cursor: page.next_cursor } };
    },
    get: async ({ params, req }) => {
      const agent = await getAgent(db, principalOf(req).tenantId, params.external_id);
      if (!agent) throw notFound(params.external_id);
      return { status: 200, body: agentBody(agent) };
    },
    delete: async ({ params, req }) => {
      const { tenantId } = principalOf(req);
      const removed = await deleteAgent(db, tenantId, params.external_id);
      if (removed === null) throw notFound(params.external_id);
      if (removed.clientsRemoved === 0 && removed.keysRevoked === 0) changedNothing(req, 'keys');
      return {
        status: 200,
        body: { external_id: params.external_id, grants_removed: removed.grantsRemoved, clients_removed: removed.clientsRemoved },
      };
    },
  });
