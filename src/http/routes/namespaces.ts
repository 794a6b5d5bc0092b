import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { validateRelations } from '../../engine/schema.ts';
import { createNamespace, listNamespaces } from '../../store/namespaces.ts';
import { namespaceBody } from '../bodies.ts';
import { principalOf, type AppDeps } from '../context.ts';

const s = initServer();

export const namespaceRoutes = ({ db, announce }: AppDeps) =>
  s.router(contract.namespaces, {
    create: async ({ body, req }) => {
      const { tenantId } = principalOf(req);
      if (body.relations) validateRelations(body.relations);
      const created = await createNamespace(db, tenantId, body.name, body.relations ?? null);
      await announce({ kind: 'namespaces', tenantId });
      return { status: 201, body: namespaceBody(created) };
    },
    list: async ({ req }) => {
      const rows = await listNamespaces(db, principalOf(req).tenantId);
      return { status: 200, body: { namespaces: rows.map(namespaceBody) } };
    },
  });
