import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, conflict, notFound } from './problems.ts';
import { NameSchema, TimestampSchema } from './schemas.ts';
import { requires, writes } from './metadata.ts';

const c = initContract();

/**
 * Limits on a tenant's model, so that compiling it and walking it stay cheap for every tenant of a
 * node: far above what real models use (tens of relations, a handful of includes each). The others
 * alone would let a model compile to hundreds of thousands of rows (tens of MB, seconds of CPU).
 */
export const MODEL_LIMITS = {
  namespacesPerTenant: 100,
  relationsPerNamespace: 64,
  includesPerRelation: 16,
  /** Closure rows plus arrows, over all the tenant's namespaces. */
  compiledRowsPerTenant: 10_000,
} as const;

const INCLUDE_PATTERN = /^[a-z][a-z0-9_]{0,62}(->[a-z][a-z0-9_]{0,62})?$/;

/** A list of references (R or T->R) of a relation definition: what `includes`, `requires` and `excludes` each hold. */
const referencesOf = (what: string) =>
  z
    .array(z.string().regex(INCLUDE_PATTERN, 'must be a relation R or an arrow T->R'))
    .max(MODEL_LIMITS.includesPerRelation, `at most ${MODEL_LIMITS.includesPerRelation} references per list`)
    .optional()
    .describe(what);

export const RelationDefinitionSchema = z
  .object({
    includes: referencesOf('What else confers this relation: R (R on the same object) or T->R (R on every X granted T on this object)'),
    requires: referencesOf(
      "What a holder must also hold, every one of them (intersection, OpenFGA's `and`): references as in `includes`, evaluated for the subject as a whole",
    ),
    excludes: referencesOf(
      "What a holder must hold none of (exclusion, OpenFGA's `but not`): references as in `includes`; no cycle of the model may pass through one",
    ),
  })
  .strict();

const RelationsSchema = z
  .record(NameSchema, RelationDefinitionSchema)
  .refine((r) => Object.keys(r).length <= MODEL_LIMITS.relationsPerNamespace, {
    message: `at most ${MODEL_LIMITS.relationsPerNamespace} relations per namespace`,
  })
  .describe('Declared relations; without it the namespace is open (any relation, nothing inherited)');

export const CreateNamespaceSchema = z.object({ name: NameSchema, relations: RelationsSchema.optional() }).strict();

/** A namespace's new definition: what creating it takes, less the name, which the path gives. */
export const UpdateNamespaceSchema = CreateNamespaceSchema.omit({ name: true });

export const NamespaceSchema = z.object({
  name: z.string(),
  relations: z.record(RelationDefinitionSchema).nullable().describe('null for an open namespace'),
  created_at: TimestampSchema,
  updated_at: TimestampSchema.describe('When the definition last changed; created_at for a namespace never changed'),
});

const NamespacePathSchema = z.object({ name: NameSchema.describe("The namespace's name") });

const LIMITS_TEXT =
  `A tenant holds at most ${MODEL_LIMITS.namespacesPerTenant} namespaces besides \`user\` and \`agent\`, a namespace at most ` +
  `${MODEL_LIMITS.relationsPerNamespace} relations, a relation at most ${MODEL_LIMITS.includesPerRelation} references in each of includes, requires and excludes, and its model compiles to at most ` +
  `${MODEL_LIMITS.compiledRowsPerTenant} rows over all its namespaces: for each relation, one for itself and one for each relation it includes ` +
  'directly or through others on the same object, plus one for each arrow (400 `invalid-request` past any).';

export const namespacesContract = c.router({
  create: {
    method: 'POST',
    path: '/namespaces',
    summary: 'Create a namespace',
    description:
      'With `relations` (even `{}`) only the declared relations exist; without it the namespace is open. ' +
      'Definitions referencing an undeclared relation, referring to themselves in a cycle on the same object, or putting an ' +
      "exclusion on a cycle of the tenant's relations (through arrows too) are rejected with 400 `invalid-namespace`. " +
      LIMITS_TEXT,
    body: CreateNamespaceSchema,
    responses: {
      201: NamespaceSchema,
      ...badRequest(['invalid-request', 'invalid-namespace']),
      ...conflict(['namespace-exists']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: writes('grant:write', { invalidates: ['namespaces'] }),
  },
  list: {
    method: 'GET',
    path: '/namespaces',
    summary: 'List namespaces',
    description: 'Every namespace of the tenant, by name, including the built-in open namespaces `user` and `agent`.',
    responses: { 200: z.object({ namespaces: z.array(NamespaceSchema) }), ...badRequest(['invalid-request', 'invalid-revision']), ...commonProblems },
    metadata: requires('grant:read', 'reads'),
  },
  get: {
    method: 'GET',
    path: '/namespaces/:name',
    summary: 'Get a namespace',
    pathParams: NamespacePathSchema,
    responses: {
      200: NamespaceSchema,
      ...badRequest(['invalid-request', 'invalid-revision']),
      ...notFound(['namespace-not-found']),
      ...commonProblems,
    },
    metadata: requires('grant:read', 'reads'),
  },
  update: {
    method: 'PUT',
    path: '/namespaces/:name',
    summary: 'Change a namespace',
    description:
      'Replaces the definition: with `relations` (even `{}`) only those relations exist, without it the namespace is open. ' +
      'Checks on this node answer by the new definition at once, other nodes within the freshness bound. ' +
      'Refused with 400 `invalid-namespace` as a creation is, and with 409 `namespace-in-use` when grants use a relation the new definition does not declare (the detail names ' +
      'each such relation and how many grants use it); `user` and `agent` cannot be changed (400 `invalid-namespace`). ' +
      LIMITS_TEXT,
    pathParams: NamespacePathSchema,
    body: UpdateNamespaceSchema,
    responses: {
      200: NamespaceSchema,
      ...badRequest(['invalid-request', 'invalid-namespace']),
      ...notFound(['namespace-not-found']),
      ...conflict(['namespace-in-use']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: writes('grant:write', { invalidates: ['namespaces'] }),
  },
  delete: {
    method: 'DELETE',
    path: '/namespaces/:name',
    summary: 'Delete a namespace',
    description:
      'Refused with 409 `namespace-in-use` while any grant names an object or a subject in it; `user` and `agent` ' +
      'cannot be deleted (400 `invalid-namespace`).',
    pathParams: NamespacePathSchema,
    body: c.noBody(),
    responses: {
      204: c.noBody(),
      ...badRequest(['invalid-request', 'invalid-namespace']),
      ...notFound(['namespace-not-found']),
      ...conflict(['namespace-in-use']),
      ...commonProblems,
    },
    metadata: writes('grant:write', { invalidates: ['namespaces'] }),
  },
});
