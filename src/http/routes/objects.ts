import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { nextAfter } from '../../engine/listing-pages.ts';
import { inSpan } from '../../tracing.ts';
import { principalOf, type AppDeps } from '../context.ts';
import { decodeStringTuple, nextCursor } from '../cursor.ts';

const s = initServer();

export const objectRoutes = ({ engine }: AppDeps) =>
  s.router(contract.objects, {
    list: async ({ query, req }) => {
      const { tenantId, cursorSecret } = principalOf(req);
      const binding = ['objects', query.namespace, query.subject, query.relation];
      const after = decodeStringTuple(cursorSecret, binding, query.cursor, 1)?.[0] ?? null;
      const page = await inSpan('grantd.list_objects', { 'grantd.namespace': query.namespace, 'grantd.relation': query.relation }, () =>
        engine.listObjects(tenantId, { ...query, after }),
      );
      const position = nextAfter(page);
      return {
        status: 200,
        body: {
          namespace: query.namespace,
          objects: page.ids,
          next_cursor: nextCursor(cursorSecret, binding, page.more, position === undefined ? undefined : [position]),
        },
      };
    },
  });
