import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, commonProblems, notFound, tooComplex } from './problems.ts';
import { CursorSchema, LimitSchema, NameSchema, NextCursorSchema, ObjectSchema, RelationSchema } from './schemas.ts';
import { requires } from './metadata.ts';

const c = initContract();

const ListSubjectsQuerySchema = z
  .object({
    object: ObjectSchema,
    relation: RelationSchema,
    subject_namespace: NameSchema.describe('Namespace of the subjects to list (an existing one, e.g. user or agent)'),
    cursor: CursorSchema.optional(),
    limit: LimitSchema,
  })
  .strict();

export const SubjectPageSchema = z.object({
  object: z.string().describe('Echo of the object asked about'),
  relation: z.string().describe('Echo of the relation asked about'),
  subjects: z.array(z.string()).describe('Subjects `<namespace>:<id>` for which a check is true, ascending in byte order of their ids'),
  next_cursor: NextCursorSchema,
});

export const subjectsContract = c.router({
  list: {
    method: 'GET',
    path: '/subjects',
    summary: 'List the subjects that hold a relation on an object',
    description:
      'Every subject of subject_namespace for which a check of (subject, relation, object) is true, directly or through a group ' +
      'it is a direct member of (agents: registered ones whose scope covers it), ascending, keyset-paginated. The cursor is bound ' +
      'to the object, relation and subject_namespace it was issued for. Subjects are those named as the subject of some grant (and ' +
      'registered agents), plus `<subject_namespace>:*`, listed first, when every subject of the namespace holds it (docs/model.md#listings). ' +
      'A page of a relation with rules may be short, even empty, with a next_cursor: it ends once its checks cost what a page may ' +
      '(docs/checks-and-listings.md#what-a-page-costs).',
    query: ListSubjectsQuerySchema,
    responses: {
      200: SubjectPageSchema,
      ...badRequest(['invalid-request', 'invalid-object', 'unknown-relation', 'invalid-cursor', 'invalid-revision']),
      ...notFound(['namespace-not-found']),
      ...tooComplex,
      ...commonProblems,
    },
    metadata: requires('check:read', 'reads'),
  },
});
