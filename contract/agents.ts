import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, conflict, notFound } from './problems.ts';
import { CursorSchema, ID_PATTERN, LimitSchema, NextCursorSchema, PathIdSchema, TextSchema, TimestampSchema } from './schemas.ts';
import { requires, writes } from './metadata.ts';

const c = initContract();

const USER_SUBJECT_PATTERN = new RegExp(`^user:${ID_PATTERN.source.slice(1, -1)}$`);

export const CreateAgentSchema = z
  .object({
    external_id: PathIdSchema.describe("The agent's own id; its subject is agent:<external_id>"),
    display_name: TextSchema.min(1).max(256).optional(),
    owner: z.string().regex(USER_SUBJECT_PATTERN, 'must be a user subject, user:<id>').optional().describe('The user the agent acts for'),
    scope: z
      .array(TextSchema.min(1).max(256))
      .max(256)
      .describe('Scope mask: <namespace>:<relation> entries, either side may be *, e.g. document:viewer or *:*'),
  })
  .strict();

export const AgentSchema = z.object({
  external_id: z.string(),
  subject: z.string().describe('agent:<external_id>'),
  display_name: z.string().nullable(),
  owner: z.string().nullable(),
  scope: z.array(z.string()),
  created_at: TimestampSchema,
});

const AgentPathSchema = z.object({ external_id: PathIdSchema });

export const agentsContract = c.router({
  create: {
    method: 'POST',
    path: '/agents',
    summary: 'Register an agent',
    description: 'Reserves the subject agent:<external_id>; creates no grants.',
    body: CreateAgentSchema,
    responses: {
      201: AgentSchema,
      ...badRequest(['invalid-request', 'invalid-subject']),
      ...conflict(['agent-exists']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: writes('grant:write', { invalidates: ['grants'] }),
  },
  list: {
    method: 'GET',
    path: '/agents',
    summary: 'List agents',
    description: 'Ordered by external_id; keyset-paginated.',
    query: z.object({ cursor: CursorSchema.optional(), limit: LimitSchema }).strict(),
    responses: {
      200: z.object({ agents: z.array(AgentSchema), next_cursor: NextCursorSchema }),
      ...badRequest(['invalid-request', 'invalid-cursor', 'invalid-revision']),
      ...commonProblems,
    },
    metadata: requires('grant:read', 'reads'),
  },
  get: {
    method: 'GET',
    path: '/agents/:external_id',
    summary: 'Get an agent',
    pathParams: AgentPathSchema,
    responses: {
      200: AgentSchema,
      ...badRequest(['invalid-request', 'invalid-revision']),
      ...notFound(['agent-not-found']),
      ...commonProblems,
    },
    metadata: requires('grant:read', 'reads'),
  },
  delete: {
    method: 'DELETE',
    path: '/agents/:external_id',
    summary: 'Kill an agent',
    description:
      'Killswitch: removes the agent, every grant naming it (as subject or object) and its OAuth clients with their tokens, in one transaction. ' +
      'A grant written concurrently either lands before and is removed, or is refused.',
    pathParams: AgentPathSchema,
    body: c.noBody(),
    responses: {
      200: z.object({
        external_id: z.string(),
        grants_removed: z.number().int(),
        clients_removed: z.number().int().describe("The agent's OAuth clients, deleted with their tokens"),
      }),
      ...badRequest(['invalid-request']),
      ...notFound(['agent-not-found']),
      ...commonProblems,
    },
    // keys: its OAuth clients' tokens end with them, and the keys made on its authority are revoked.
    metadata: writes('grant:write', { invalidates: ['grants', 'keys'] }),
  },
});
