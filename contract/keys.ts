import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, notFound } from './problems.ts';
import { TextSchema, TimestampSchema } from './schemas.ts';
import { requires, writes } from './metadata.ts';
import { KeyScopeSchema } from './scopes.ts';

const c = initContract();

export const CreateKeySchema = z
  .object({
    label: TextSchema.max(256).default('').describe('Free-text name of the key'),
    scopes: z.array(KeyScopeSchema).min(1).max(4).default(['check:read']).describe('Scope mask; defaults to ["check:read"]'),
  })
  .strict();

export const CreatedKeySchema = z.object({
  id: z.string().describe('key_ followed by base62'),
  prefix: z.string().describe('First 17 characters of the secret (svc_live_ + 8)'),
  secret: z.string().describe('The full secret; returned only here, exactly once'),
  label: z.string(),
  scopes: z.array(KeyScopeSchema),
  created_at: TimestampSchema,
});

export const KeySummarySchema = CreatedKeySchema.omit({ secret: true }).extend({
  last_used_at: TimestampSchema.nullable(),
});

export const keysContract = c.router({
  create: {
    method: 'POST',
    path: '/keys',
    summary: 'Create an API key',
    description: 'The secret is in this response only and cannot be retrieved again.',
    body: CreateKeySchema,
    responses: { 201: CreatedKeySchema, ...badRequest(['invalid-request']), ...bodyProblems, ...commonProblems },
    metadata: writes('admin', { invalidates: [] }),
  },
  list: {
    method: 'GET',
    path: '/keys',
    summary: 'List API keys',
    description: 'Live keys of the tenant, oldest first; never the secret.',
    responses: { 200: z.object({ keys: z.array(KeySummarySchema) }), ...badRequest(['invalid-request']), ...commonProblems },
    metadata: requires('admin'),
  },
  revoke: {
    method: 'DELETE',
    path: '/keys/:id',
    summary: 'Revoke an API key',
    description: 'Effective at once on this node and within one second on every node. An unknown or already revoked key is 404.',
    pathParams: z.object({ id: z.string().min(1).max(128) }),
    body: c.noBody(),
    responses: { 204: c.noBody(), ...badRequest(['invalid-request']), ...notFound(['key-not-found']), ...commonProblems },
    metadata: writes('admin', { invalidates: ['keys'] }),
  },
});
