import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, notFound, tooComplex } from './problems.ts';
import { ObjectSchema, RelationSchema, SubjectSchema } from './schemas.ts';
import { requires } from './scopes.ts';

const c = initContract();

export const CheckRequestSchema = z
  .object({ subject: SubjectSchema, relation: RelationSchema, object: ObjectSchema })
  .strict()
  .describe('Does subject hold relation on object?');
export const CheckResultSchema = z.object({ allowed: z.boolean() });

export const BulkCheckRequestSchema = z.object({ checks: z.array(CheckRequestSchema).min(1).max(1000).describe('1 to 1000 checks') }).strict();
export const BulkCheckItemErrorSchema = z.object({
  type: z.enum(['namespace-not-found', 'unknown-relation', 'check-too-complex']),
  detail: z.string(),
});
export const BulkCheckResultSchema = z.object({
  results: z.array(z.object({ allowed: z.boolean(), error: BulkCheckItemErrorSchema.optional() })).describe('One result per check, in request order'),
});

export const checkContract = c.router({
  check: {
    method: 'POST',
    path: '/check',
    summary: 'Check one permission',
    description:
      'True when the subject, or a group it is a direct member of, holds the relation on the object directly, ' +
      'through relations it includes, or through parent arrows; agent subjects are further capped by their scope.',
    body: CheckRequestSchema,
    responses: {
      200: CheckResultSchema,
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object', 'unknown-relation']),
      ...notFound(['namespace-not-found']),
      ...tooComplex,
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: requires('check:read'),
  },
  checkBulk: {
    method: 'POST',
    path: '/check/bulk',
    summary: 'Check up to 1000 permissions at once',
    description:
      'Answers every check in request order. A check naming an unknown namespace or relation, or one that ' +
      'exceeds the work budget of a check, gets `allowed: false` and an `error`, and the others are still answered.',
    body: BulkCheckRequestSchema,
    responses: {
      200: BulkCheckResultSchema,
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: requires('check:read'),
  },
});
