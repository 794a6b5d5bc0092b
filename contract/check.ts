import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, notFound, tooComplex } from './problems.ts';
import { ObjectSchema, RelationSchema, SubjectSchema } from './schemas.ts';
import { requires } from './metadata.ts';

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

export const ExplainStepSchema = z.object({
  subject: z.string().describe('Subject of the grant, <namespace>:<id>'),
  relation: z.string().describe('Relation of the grant'),
  object: z.string().describe('Object of the grant, <namespace>:<id>'),
  via: z
    .string()
    .regex(/^(direct|member|includes:[a-z][a-z0-9_]*|arrow:[a-z][a-z0-9_]*->[a-z][a-z0-9_]*)$/)
    .describe(
      'How the grant counts: `direct` (its relation is the one needed on its object), `includes:<R>` (its relation R is included by ' +
        'the one needed), `arrow:<T->R>` (it is the grant (X, T, object) of that arrow), `member` (the subject is a direct member of the group)',
    ),
});
/**
 * Why a check is denied; the time reasons name grants outside their validity window, `excluded` and
 * `requirement-not-met` a relation's `excludes` and `requires` (docs/model.md#explain).
 */
export const DENIAL_REASONS = [
  'no-path',
  'agent-not-registered',
  'agent-scope',
  'not-yet-valid',
  'expired',
  'excluded',
  'requirement-not-met',
] as const;
const ExplainPathSchema = z.array(ExplainStepSchema);
export const ExplainRequirementSchema = z.object({
  reference: z.string().describe("A reference of the relation's `requires`, as the definition gives it: R or T->R (e.g. `org->member`)"),
  path: ExplainPathSchema.describe('One shortest chain of grants in force by which the subject holds it'),
});
export const ExplainResultSchema = z.object({
  allowed: z.boolean(),
  path: ExplainPathSchema.describe(
    'When allowed: one shortest chain of grants in force, from the subject to the object, that confers the relation (its grants, ' +
      'includes and arrows; `requirements` shows the rest); when denied as `excluded`: one shortest chain by which the subject holds ' +
      'the excluding relation; else []',
  ),
  reason: z.enum(DENIAL_REASONS).nullable().describe('Why the check is denied; null when it is allowed'),
  requirements: z
    .array(ExplainRequirementSchema)
    .optional()
    .describe("When allowed and the relation has `requires`: one entry for each reference, in the definition's order; absent otherwise"),
  detail: z
    .string()
    .optional()
    .describe(
      "When denied as `excluded`: the `excludes` reference the subject holds (the first in the definition's order); as " +
        "`requirement-not-met`: the first `requires` reference, in the definition's order, that the subject does not hold",
    ),
});

export const checkContract = c.router({
  check: {
    method: 'POST',
    path: '/check',
    summary: 'Check one permission',
    description:
      'True when the subject, or a group it is a direct member of, holds the relation on the object directly, ' +
      'through relations it includes, or through parent arrows, and holds every reference of its `requires` and none of its `excludes`; ' +
      'a grant to `<namespace>:*` is held by every subject of the namespace; agent subjects are further capped by their scope.',
    body: CheckRequestSchema,
    responses: {
      200: CheckResultSchema,
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object', 'unknown-relation', 'invalid-revision']),
      ...notFound(['namespace-not-found']),
      ...tooComplex,
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: requires('check:read', 'reads', { idempotent: true }),
  },
  explain: {
    method: 'POST',
    path: '/check/explain',
    summary: 'Explain one permission',
    description:
      'Answers as POST /v1/check does, and says why: when allowed, one shortest chain of grants conferring it (fewest grants) and ' +
      'one for each `requires` reference; when denied, the reason (and for `excluded` the chain to the excluding relation, for ' +
      '`requirement-not-met` the reference not held).',
    body: CheckRequestSchema,
    responses: {
      200: ExplainResultSchema,
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object', 'unknown-relation', 'invalid-revision']),
      ...notFound(['namespace-not-found']),
      ...tooComplex,
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: requires('check:read', 'reads', { idempotent: true }),
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
      ...badRequest(['invalid-request', 'invalid-subject', 'invalid-object', 'invalid-revision']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: requires('check:read', 'reads', { idempotent: true }),
  },
});
