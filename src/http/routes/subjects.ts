import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { nextAfter } from '../../engine/listing-pages.ts';
import { principalOf, type AppDeps } from '../context.ts';
import { decodeStringTuple, nextCursor } from '../cursor.ts';

const s = initServer();

export const subjectRoutes = ({ engine }: AppDeps) =>
  s.router(contract.subjects, {
    list: async ({ query, req }) => {
      const { tenantId, cursorSecret } = principalOf(req);
      const binding = ['subjects', query.object, query.relation, query.subject_namespace];
      const after = decodeStringTuple(cursorSecret, binding, query.cursor, 1)?.[0] ?? null;
      const page = await engine.listSubjects(tenantId, {
        object: query.object,
        relation: query.relation,
        subjectNamespace: query.subject_namespace,
        after,
        limit: query.limit,
      });
      const position = nextAfter(page);
      return {
        status: 200,
        body: {
          object: query.object,
          relation: query.relation,
          subjects: page.ids.map((id) => `${query.subject_namespace}:${id}`),
          next_cursor: nextCursor(cursorSecret, binding, page.more, position === undefined ? undefined : [position]),
        },
      };
    },
  });
