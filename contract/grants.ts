import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, notFound } from './problems.ts';
import {
  CursorSchema,
  LimitSchema,
  NameSchema,
  NextCursorSchema,
  ObjectSchema,
  RelationSchema,
  SubjectSchema,
  TimestampSchema,
  TripleSchema,
} from './schemas.ts';
import { requires } from './scopes.ts';

const c = initContract();

export const GrantSchema = TripleSchema.extend({ created_at: TimestampSchema });

const ListGrantsQuerySchema = z
  .object({
    subject: SubjectSchema.optional(),
    relation: RelationSchema.optional(),
    object: ObjectSchema.optional(),
    namespace: NameSchema.optional().describe('Only grants whose object is in this namespace'),
    cursor: CursorSchema.optional(),
    limit: LimitSchema,
  })
  .strict();

export const GrantPageSchema = z.object({ grants: z.array(GrantSchema), next_cursor: NextCursorSchema });

export const BatchRequestSchema = z
  .object({
    writes: z.array(TripleSchema).max(1000).default([]).describe('Grants to create'),
    deletes: z.array(TripleSchema).max(1000).default([]).describe('Grants to remove'),
  })
  .strict()
  .refine((b) => b.writes.length + b.deletes.length >= 1 && b.writes.length + b.deletes.length <= 1000, {
    message: 'writes and deletes must hold 1 to 1000 triples in all',
  });
export const BatchResultSchema = z.object({
  written: z.number().int().describe('Grants newly created'),
  deleted: z.number().int().describe('Grants actually removed'),
});

const grantProblems = {
  ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object', 'unknown-relation']),
  ...notFound(['namespace-not-found', 'agent-not-found']),
  ...bodyProblems,
  ...commonProblems,
};

export const grantsContract = c.router({
  create: {
    method: 'POST',
    path: '/grants',
    summary: 'Create a grant',
    description:
      "Idempotent: the same triple again answers 200 with the original grant. The object's namespace must exist, " +
      'and an agent named as subject or object must be registered.',
    body: TripleSchema,
    responses: { 201: GrantSchema, 200: GrantSchema, ...grantProblems },
    metadata: requires('grant:write'),
  },
  revoke: {
    method: 'DELETE',
    path: '/grants',
    summary: 'Revoke a grant',
    description:
      'Removes the triple given as the JSON body, or as the query parameters subject, relation and object (for proxies and ' +
      'tools that drop the body of a DELETE), not both; 204 also when it did not exist.',
    query: TripleSchema.partial(),
    body: TripleSchema.optional(),
    responses: {
      204: c.noBody(),
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: requires('grant:write'),
  },
  list: {
    method: 'GET',
    path: '/grants',
    summary: 'List grants',
    description: 'Every filter is optional. Ordered by object, relation, then subject; keyset-paginated.',
    query: ListGrantsQuerySchema,
    responses: {
      200: GrantPageSchema,
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object', 'invalid-cursor']),
      ...commonProblems,
    },
    metadata: requires('grant:read'),
  },
  batch: {
    method: 'POST',
    path: '/grants/batch',
    summary: 'Write and delete grants atomically',
    description: '1 to 1000 triples in all, applied all or nothing: one invalid item rejects the batch with its problem.',
    body: BatchRequestSchema,
    responses: { 200: BatchResultSchema, ...grantProblems },
    metadata: requires('grant:write'),
  },
});
