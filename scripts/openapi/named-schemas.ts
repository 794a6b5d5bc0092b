import type { ZodTypeAny } from 'zod';
import { AgentSchema, CreateAgentSchema } from '../../contract/agents.ts';
import {
  BulkCheckItemErrorSchema,
  BulkCheckRequestSchema,
  BulkCheckResultSchema,
  CheckRequestSchema,
  CheckResultSchema,
  ExplainResultSchema,
  ExplainStepSchema,
} from '../../contract/check.ts';
import { BatchRequestSchema, BatchResultSchema, GrantPageSchema, GrantSchema } from '../../contract/grants.ts';
import { contract, TripleSchema, ValidationIssueSchema } from '../../contract/index.ts';
import { CreatedKeySchema, CreateKeySchema, KeySummarySchema } from '../../contract/keys.ts';
import { CreateNamespaceSchema, NamespaceSchema, RelationDefinitionSchema } from '../../contract/namespaces.ts';
import {
  CreatedOAuthClientSchema,
  CreateOAuthClientSchema,
  IntrospectionSchema,
  OAuthClientSchema,
  OAuthErrorSchema,
  TokenRequestSchema,
  TokenResponseSchema,
} from '../../contract/oauth.ts';
import { ObjectPageSchema } from '../../contract/objects.ts';
import { SubjectPageSchema } from '../../contract/subjects.ts';
import { KeyScopeSchema } from '../../contract/scopes.ts';

export interface NamedSchema {
  name: string;
  schema: ZodTypeAny;
  /** Rendered as zod's output (responses) or input (request bodies, with defaults optional). */
  output: boolean;
}

/**
 * Named schemas of the contract, in the order components/schemas lists them. Wherever the
 * document holds a schema identical to one of these, it becomes a $ref to it.
 */
export const NAMED_SCHEMAS: readonly NamedSchema[] = [
  { name: 'CheckRequest', schema: CheckRequestSchema, output: false },
  { name: 'CheckResult', schema: CheckResultSchema, output: true },
  { name: 'BulkCheckRequest', schema: BulkCheckRequestSchema, output: false },
  { name: 'BulkCheckResult', schema: BulkCheckResultSchema, output: true },
  { name: 'BulkCheckItemError', schema: BulkCheckItemErrorSchema, output: true },
  { name: 'ExplainResult', schema: ExplainResultSchema, output: true },
  { name: 'ExplainStep', schema: ExplainStepSchema, output: true },
  { name: 'ObjectPage', schema: ObjectPageSchema, output: true },
  { name: 'SubjectPage', schema: SubjectPageSchema, output: true },
  { name: 'Triple', schema: TripleSchema, output: false },
  { name: 'Grant', schema: GrantSchema, output: true },
  { name: 'GrantPage', schema: GrantPageSchema, output: true },
  { name: 'GrantBatchRequest', schema: BatchRequestSchema, output: false },
  { name: 'GrantBatchResult', schema: BatchResultSchema, output: true },
  { name: 'CreateNamespaceRequest', schema: CreateNamespaceSchema, output: false },
  { name: 'RelationDefinition', schema: RelationDefinitionSchema, output: true },
  { name: 'Namespace', schema: NamespaceSchema, output: true },
  { name: 'NamespaceList', schema: contract.namespaces.list.responses[200], output: true },
  { name: 'CreateAgentRequest', schema: CreateAgentSchema, output: false },
  { name: 'Agent', schema: AgentSchema, output: true },
  { name: 'AgentPage', schema: contract.agents.list.responses[200], output: true },
  { name: 'AgentDeleted', schema: contract.agents.delete.responses[200], output: true },
  { name: 'CreateKeyRequest', schema: CreateKeySchema, output: false },
  { name: 'CreatedKey', schema: CreatedKeySchema, output: true },
  { name: 'KeySummary', schema: KeySummarySchema, output: true },
  { name: 'KeyList', schema: contract.keys.list.responses[200], output: true },
  { name: 'CreateOAuthClientRequest', schema: CreateOAuthClientSchema, output: false },
  { name: 'CreatedOAuthClient', schema: CreatedOAuthClientSchema, output: true },
  { name: 'OAuthClient', schema: OAuthClientSchema, output: true },
  { name: 'OAuthClientList', schema: contract.oauth.clients.list.responses[200], output: true },
  { name: 'TokenRequest', schema: TokenRequestSchema, output: false },
  { name: 'TokenResponse', schema: TokenResponseSchema, output: true },
  { name: 'Introspection', schema: IntrospectionSchema, output: true },
  { name: 'OAuthError', schema: OAuthErrorSchema, output: true },
  { name: 'KeyScope', schema: KeyScopeSchema, output: true },
  { name: 'ValidationIssue', schema: ValidationIssueSchema, output: true },
];
