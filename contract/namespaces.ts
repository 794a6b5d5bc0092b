import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, conflict } from './problems.ts';
import { NameSchema, TimestampSchema } from './schemas.ts';
import { requires } from './scopes.ts';

const c = initContract();

export const INCLUDE_PATTERN = /^[a-z][a-z0-9_]{0,62}(->[a-z][a-z0-9_]{0,62})?$/;

export const RelationDefinitionSchema = z
  .object({
    includes: z
      .array(z.string().regex(INCLUDE_PATTERN, 'must be a relation R or an arrow T->R'))
      .max(64)
      .optional()
      .describe('What else confers this relation: R (R on the same object) or T->R (R on every X granted T on this object)'),
  })
  .strict();

export const RelationsSchema = z
  .record(NameSchema, RelationDefinitionSchema)
  .refine((r) => Object.keys(r).length <= 128, { message: 'at most 128 relations' })
  .describe('Declared relations; without it the namespace is open (any relation, nothing inherited)');

export const CreateNamespaceSchema = z.object({ name: NameSchema, relations: RelationsSchema.optional() }).strict();

export const NamespaceSchema = z.object({
  name: z.string(),
  relations: z.record(RelationDefinitionSchema).nullable().describe('null for an open namespace'),
  created_at: TimestampSchema,
});

export const namespacesContract = c.router({
  create: {
    method: 'POST',
    path: '/namespaces',
    summary: 'Create a namespace',
    description:
      'With `relations` (even `{}`) only the declared relations exist; without it the namespace is open. ' +
      'Definitions referencing an undeclared relation or including themselves in a cycle are rejected.',
    body: CreateNamespaceSchema,
    responses: {
      201: NamespaceSchema,
      ...badRequest(['invalid-request', 'invalid-namespace']),
      ...conflict(['namespace-exists']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: requires('grant:write'),
  },
  list: {
    method: 'GET',
    path: '/namespaces',
    summary: 'List namespaces',
    description: 'Every namespace of the tenant, by name, including the built-in open namespaces `user` and `agent`.',
    responses: { 200: z.object({ namespaces: z.array(NamespaceSchema) }), ...commonProblems },
    metadata: requires('grant:read'),
  },
});
