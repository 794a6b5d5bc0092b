import { DomainError } from '../errors.ts';
import { AGENT_NAMESPACE, parseRef, type Ref } from './refs.ts';
import type { CompiledSchema } from './schema.ts';
import { scopeCovers } from './scope.ts';

/** One check the store evaluates: does `subject` (or a group it is a direct member of) hold `relation` on `object`? */
export interface GraphQuery {
  subject: Ref;
  relation: string;
  object: Ref;
}

/** What the engine needs from persistence; every call is confined to one tenant. */
export interface GraphStore {
  /** The tenant's namespaces, compiled; `fresh` bypasses any cache (a name may have just been created elsewhere). */
  schema(tenantId: string, options?: { fresh?: boolean }): Promise<CompiledSchema>;
  /** Scope masks of the given agents that are registered; absent ids are not. */
  agentScopes(tenantId: string, externalIds: readonly string[]): Promise<Map<string, string[]>>;
  /** For each query, whether the graph (ignoring agent scopes) allows it; one round trip for the lot. */
  evaluate(tenantId: string, schema: CompiledSchema, queries: readonly GraphQuery[]): Promise<boolean[]>;
  /** Ids of `namespace` objects on which `subject` holds `relation`, ascending, after `after`, at most `limit`. */
  reachable(
    tenantId: string,
    schema: CompiledSchema,
    query: { subject: Ref; namespace: string; relation: string; after: string | null; limit: number },
  ): Promise<string[]>;
}

export interface CheckInput {
  subject: string;
  relation: string;
  object: string;
}

export type BulkResult = { allowed: boolean; error?: { type: 'namespace-not-found' | 'unknown-relation'; detail: string } };

/**
 * The authorization graph: API.md's "what a check means". Validation, agent scope masks and the
 * choice of queries live here; the set-based graph walk is the store's.
 */
export class AuthorizationEngine {
  constructor(readonly store: GraphStore) {}

  private schemaWith(tenantId: string, namespaces: Iterable<string>): Promise<CompiledSchema> {
    return schemaKnowing(this.store, tenantId, namespaces);
  }

  async check(tenantId: string, input: CheckInput): Promise<boolean> {
    const [result] = await this.checkMany(tenantId, [input], { throwItemErrors: true });
    return result!.allowed;
  }

  async checkBulk(tenantId: string, inputs: readonly CheckInput[]): Promise<BulkResult[]> {
    return this.checkMany(tenantId, inputs, { throwItemErrors: false });
  }

  private async checkMany(
    tenantId: string,
    inputs: readonly CheckInput[],
    { throwItemErrors }: { throwItemErrors: boolean },
  ): Promise<BulkResult[]> {
    const queries = inputs.map((input) => ({
      subject: parseRef(input.subject, 'subject'),
      relation: input.relation,
      object: parseRef(input.object, 'object'),
    }));
    const schema = await this.schemaWith(tenantId, new Set(queries.map((q) => q.object.ns)));
    const agentIds = [...new Set(queries.filter((q) => q.subject.ns === AGENT_NAMESPACE).map((q) => q.subject.id))];
    const scopes = agentIds.length > 0 ? await this.store.agentScopes(tenantId, agentIds) : new Map<string, string[]>();

    const results: BulkResult[] = new Array(queries.length);
    const toEvaluate: number[] = [];
    queries.forEach((query, index) => {
      try {
        schema.assertRelation(query.object.ns, query.relation);
      } catch (error) {
        if (throwItemErrors || !(error instanceof DomainError)) throw error;
        results[index] = { allowed: false, error: { type: error.type as 'namespace-not-found', detail: error.detail } };
        return;
      }
      if (!this.agentMayHold(scopes, query)) results[index] = { allowed: false };
      else toEvaluate.push(index);
    });
    if (toEvaluate.length > 0) {
      const answers = await this.store.evaluate(tenantId, schema, toEvaluate.map((i) => queries[i]!));
      toEvaluate.forEach((queryIndex, answerIndex) => {
        results[queryIndex] = { allowed: answers[answerIndex]! };
      });
    }
    return results;
  }

  /** An agent subject holds nothing unless registered, and nothing its scope mask does not cover. */
  private agentMayHold(scopes: Map<string, string[]>, query: GraphQuery): boolean {
    if (query.subject.ns !== AGENT_NAMESPACE) return true;
    const scope = scopes.get(query.subject.id);
    return scope !== undefined && scopeCovers(scope, query.object.ns, query.relation);
  }

  /** One page of the ids on which check(subject, relation, namespace:id) is true, ascending. */
  async listObjects(
    tenantId: string,
    query: { subject: string; namespace: string; relation: string; after: string | null; limit: number },
  ): Promise<{ ids: string[]; more: boolean }> {
    const subject = parseRef(query.subject, 'subject');
    const schema = await this.schemaWith(tenantId, [query.namespace]);
    schema.assertRelation(query.namespace, query.relation);
    if (subject.ns === AGENT_NAMESPACE) {
      const scopes = await this.store.agentScopes(tenantId, [subject.id]);
      const probe = { subject, relation: query.relation, object: { ns: query.namespace, id: '' } };
      if (!this.agentMayHold(scopes, probe)) return { ids: [], more: false };
    }
    const ids = await this.store.reachable(tenantId, schema, {
      subject,
      namespace: query.namespace,
      relation: query.relation,
      after: query.after,
      limit: query.limit + 1,
    });
    return { ids: ids.slice(0, query.limit), more: ids.length > query.limit };
  }
}

/** A grant to write, parsed and checked against the tenant's namespaces. */
export interface ParsedTriple {
  subject: Ref;
  relation: string;
  object: Ref;
}

/** Parses triples; with `validate`, also requires each object's namespace and relation to exist. */
export async function parseTriples(
  store: GraphStore,
  tenantId: string,
  inputs: readonly CheckInput[],
  validate: boolean,
): Promise<ParsedTriple[]> {
  const triples = inputs.map((t) => ({ subject: parseRef(t.subject, 'subject'), relation: t.relation, object: parseRef(t.object, 'object') }));
  if (validate) {
    const schema = await schemaKnowing(store, tenantId, triples.map((t) => t.object.ns));
    for (const t of triples) schema.assertRelation(t.object.ns, t.relation);
  }
  return triples;
}

/** The compiled schema, reloaded once when it lacks one of `namespaces` (it may be new on another node). */
async function schemaKnowing(store: GraphStore, tenantId: string, namespaces: Iterable<string>): Promise<CompiledSchema> {
  const schema = await store.schema(tenantId);
  for (const ns of namespaces) {
    if (!schema.namespace(ns)) return store.schema(tenantId, { fresh: true });
  }
  return schema;
}
