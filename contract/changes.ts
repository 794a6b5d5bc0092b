import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, commonProblems, gone } from './problems.ts';
import { LimitSchema } from './schemas.ts';
import { requires } from './metadata.ts';

const c = initContract();

/** The header every write answers with: the revision that includes it (docs/consistency.md#revisions). */
export const REVISION_HEADER = 'Grantd-Revision';
/** The header a read may carry: `at-least <revision>` or `full`. */
export const CONSISTENCY_HEADER = 'Grantd-Consistency';

export const RevisionSchema = z.string().describe("Opaque revision: a position in the tenant's changes, sealed; from Grantd-Revision or the feed");

export const ListChangesQuerySchema = z
  .object({
    after: RevisionSchema.optional().describe(
      "Changes after this revision (a write's Grantd-Revision, a change's revision, or next_revision); from the oldest kept without it",
    ),
    limit: LimitSchema,
  })
  .strict();

export const ActorSchema = z
  .object({
    key_id: z.string().optional().describe('The API key that made the change'),
    client_id: z.string().optional().describe('The OAuth client whose access token made the change'),
    sub: z.string().optional().describe("The subject the client's token speaks for, when not the client itself"),
  })
  .nullable()
  .describe('Who made the change; null for changes made outside the API (the expired-grant sweep, the CLI)');

export const ChangeSchema = z
  .object({
    revision: RevisionSchema,
    at: z.string().describe('When the change was written (ISO 8601 UTC)'),
    kind: z.enum(['grant', 'agent', 'namespace', 'key', 'oauth_client']),
    op: z.enum(['create', 'update', 'delete']),
    actor: ActorSchema,
  })
  .passthrough()
  .describe("One change, with the thing's fields as the API shows them (never a secret)");

export type Change = z.infer<typeof ChangeSchema>;

export const ChangePageSchema = z.object({
  changes: z.array(ChangeSchema).describe('In commit order, each change of the tenant exactly once'),
  next_revision: RevisionSchema.describe('What to pass as `after` next; with no newer change, the position read up to'),
});

export const changesContract = c.router({
  list: {
    method: 'GET',
    path: '/changes',
    summary: 'Read the changes feed',
    description:
      "Every change of the tenant's grants, agents, namespaces, keys and OAuth clients, exactly once and in commit order, each with its actor. " +
      'Changes of keys and OAuth clients are shown only to a caller allowed to list them (admin); others get every other change, at the same revisions. ' +
      'Changes are kept GRANTD_CHANGES_RETENTION (7 days); an `after` older than that is 410 changes-expired. Poll with next_revision to follow.',
    query: ListChangesQuerySchema,
    responses: {
      200: ChangePageSchema,
      ...badRequest(['invalid-request', 'invalid-revision']),
      ...gone,
      ...commonProblems,
    },
    metadata: requires('grant:read'),
  },
});
