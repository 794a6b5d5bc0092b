import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, commonProblems, notFound, tooComplex } from './problems.ts';
import { CursorSchema, LimitSchema, NameSchema, NextCursorSchema, RelationSchema, SubjectSchema } from './schemas.ts';
import { requires } from './metadata.ts';

const c = initContract();

export const ListObjectsQuerySchema = z
  .object({
    namespace: NameSchema.describe('Namespace to list within'),
    subject: SubjectSchema,
    relation: RelationSchema,
    cursor: CursorSchema.optional(),
    limit: LimitSchema,
  })
  .strict();

export const ObjectPageSchema = z.object({
  namespace: z.string().describe('Echo of the namespace listed'),
  objects: z.array(z.string()).describe('Object ids without the namespace prefix, ascending in byte order'),
  next_cursor: NextCursorSchema,
});

export const objectsContract = c.router({
  list: {
    method: 'GET',
    path: '/objects',
    summary: 'List the objects a subject reaches',
    description:
      'Every object id of the namespace for which a check of (subject, relation, object) is true, ascending, ' +
      'keyset-paginated. The cursor is bound to the namespace, subject and relation it was issued for. A page of a relation with rules may be ' +
      'short, even empty, with a next_cursor: it ends once its checks cost what a page may (docs/checks-and-listings.md#what-a-page-costs).',
    query: ListObjectsQuerySchema,
    responses: {
      200: ObjectPageSchema,
      ...badRequest(['invalid-request', 'invalid-subject', 'unknown-relation', 'invalid-cursor', 'invalid-revision']),
      ...notFound(['namespace-not-found']),
      ...tooComplex,
      ...commonProblems,
    },
    metadata: requires('check:read', 'reads'),
  },
});
