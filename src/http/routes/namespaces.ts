import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { validateRelations } from '../../engine/definition-checks.ts';
import { createNamespace, deleteNamespace, getNamespace, listNamespaces, updateNamespace } from '../../store/namespaces.ts';
import { namespaceBody } from '../bodies.ts';
import { principalOf, type AppDeps } from '../context.ts';

const s = initServer();

export const namespaceRoutes = ({ db }: AppDeps) =>
  s.router(contract.namespaces, {
    create: async ({ body, req }) => {
      const { tenantId } = principalOf(req);
      if (body.relations) validateRelations(body.relations);
      const created = await createNamespace(db, tenantId, body.name, body.relations ?? null);
      return { status: 201, body: namespaceBody(created) };
    },
    list: async ({ req }) => {
      const rows = await listNamespaces(db, principalOf(req).tenantId);
      return { status: 200, body: { namespaces: rows.map(namespaceBody) } };
    },
    get: async ({ params, req }) => {
      const row = await getNamespace(db, principalOf(req).tenantId, params.name);
      return { status: 200, body: namespaceBody(row) };
    },
    update: async ({ params, body, req }) => {
      const { tenantId } = principalOf(req);
      if (body.relations) validateRelations(body.relations);
      const updated = await updateNamespace(db, tenantId, params.name, body.relations ?? null);
      return { status: 200, body: namespaceBody(updated) };
    },
    delete: async ({ params, req }) => {
      const { tenantId } = principalOf(req);
      await deleteNamespace(db, tenantId, params.name);
      return { status: 204, body: undefined };
    },
  });
