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
import { requires, writes } from './metadata.ts';

const c = initContract();

/**
 * A window bound as written: any string, so that the server names the item of a batch whose time is
 * malformed (`writes[3].expires_at`) beside the other time problems (docs/model.md#time-bound-grants).
 */
const WindowInputSchema = z.string().nullable().optional();

/** A grant to write: the triple and, optionally, the window in which it is in force. */
export const GrantWriteSchema = TripleSchema.extend({
  not_before: WindowInputSchema.describe(
    'ISO 8601 UTC timestamp (e.g. 2026-12-31T23:59:59Z) from which the grant is in force; null or absent: at once',
  ),
  expires_at: WindowInputSchema.describe(
    'ISO 8601 UTC timestamp from which the grant confers nothing: in the future, after not_before; null or absent: never',
  ),
}).describe('A grant triple, with an optional window');

export const GrantSchema = TripleSchema.extend({
  created_at: TimestampSchema,
  not_before: TimestampSchema.nullable().describe('In force from this instant on; null: since its creation'),
  expires_at: TimestampSchema.nullable().describe('Confers nothing from this instant on; null: until revoked'),
});

/** Query values arrive as strings: `true` or `false` (a boolean from the client). */
const active = z.preprocess((value) => (value === 'true' ? true : value === 'false' ? false : value), z.boolean());
const ActiveSchema = (active as z.ZodEffects<z.ZodBoolean, boolean, boolean>)
  .optional()
  .describe('true: only grants in force now (expired grants are never listed; grants not yet in force are, unless this is true)');

const ListGrantsQuerySchema = z
  .object({
    subject: SubjectSchema.optional(),
    relation: RelationSchema.optional(),
    object: ObjectSchema.optional(),
    namespace: NameSchema.optional().describe('Only grants whose object is in this namespace'),
    active: ActiveSchema,
    cursor: CursorSchema.optional(),
    limit: LimitSchema,
  })
  .strict();

export const GrantPageSchema = z.object({ grants: z.array(GrantSchema), next_cursor: NextCursorSchema });

export const BatchRequestSchema = z
  .object({
    writes: z.array(GrantWriteSchema).max(1000).default([]).describe('Grants to create, or whose window to replace'),
    deletes: z.array(TripleSchema).max(1000).default([]).describe('Grants to remove'),
  })
  .strict()
  .refine(
    (b) => {
      const all = b.writes.length + b.deletes.length;
      // A list over 1000 is told by its own failure (`writes`) alone.
      return (all >= 1 && all <= 1000) || b.writes.length > 1000 || b.deletes.length > 1000;
    },
    { message: 'writes and deletes must hold 1 to 1000 triples in all' },
  );
export const BatchResultSchema = z.object({
  written: z.number().int().describe('Grants newly created, or whose window was replaced'),
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
      "Idempotent: the same triple again answers 200 with the original grant; with other times, 200 with the times replaced. The object's namespace must exist, " +
      'and an agent named as subject or object must be registered.',
    body: GrantWriteSchema,
    responses: { 201: GrantSchema, 200: GrantSchema, ...grantProblems },
    metadata: writes('grant:write', { invalidates: ['grants'], idempotent: true }),
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
    metadata: writes('grant:write', { invalidates: ['grants'] }),
  },
  list: {
    method: 'GET',
    path: '/grants',
    summary: 'List grants',
    description:
      'Every filter is optional. Ordered by object, relation, then subject; keyset-paginated. Expired grants are not listed; active=true also leaves out grants not yet in force.',
    query: ListGrantsQuerySchema,
    responses: {
      200: GrantPageSchema,
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object', 'invalid-cursor', 'invalid-revision']),
      ...commonProblems,
    },
    metadata: requires('grant:read', 'reads'),
  },
  batch: {
    method: 'POST',
    path: '/grants/batch',
    summary: 'Write and delete grants atomically',
    description: '1 to 1000 triples in all, applied all or nothing: one invalid item rejects the batch with its problem.',
    body: BatchRequestSchema,
    responses: { 200: BatchResultSchema, ...grantProblems },
    metadata: writes('grant:write', { invalidates: ['grants'] }),
  },
});
