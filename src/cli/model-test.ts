import { EVERY_SUBJECT_ID } from '../../contract/schemas.ts';
import type { Checker } from '../engine/checker.ts';
import { AuthorizationEngine } from '../engine/engine.ts';
import { GrantIndex } from '../engine/grant-index.ts';
import { IndexChecker } from '../engine/index-checker.ts';
import { nextAfter } from '../engine/listing-pages.ts';
import { AGENT_NAMESPACE, parseRef, type Ref, type Triple } from '../engine/refs.ts';
import { CompiledSchema } from '../engine/schema.ts';
import { DomainError } from '../errors.ts';
import { definitionsOf, loadModelFile, ModelFileError, type Assertion, type LoadedModel } from './model-file.ts';

/** The one tenant a model file holds: the engine's calls name a tenant, and this is it. */
const TENANT = 'model-file';
/** Page size of object listings: the API's largest. */
const PAGE = 1000;

/**
 * A Checker over a model file's grants and agents, held in the server's own in-memory index and
 * answered by the checker MemoryChecker answers a held tenant with (IndexChecker), unmetered: the
 * answers are the server's engine's, with no server and no database.
 */
function modelChecker(compiled: CompiledSchema, grants: readonly Triple[], agents: ReadonlyMap<string, readonly string[]>): Checker {
  const tenant = { index: new GrantIndex(), agents };
  for (const grant of grants) tenant.index.add(grant);
  const objectIds = idsByNamespace(grants.map((grant) => grant.object));
  // A registered agent is a candidate subject even if no grant names it: it may hold through `agent:*`.
  const subjectIds = idsByNamespace([...grants.map((grant) => grant.subject), ...[...agents.keys()].map((id) => ({ ns: AGENT_NAMESPACE, id }))]);
  const index = new IndexChecker();
  return {
    schemas: { get: () => Promise.resolve(compiled) },
    checks: { check: (_tenantId, schema, queries) => index.check(tenant, schema, queries) },
    // Null only when the grants change while a walk gives way: a model file's never do.
    walks: {
      reachable: async (_tenantId, schema, query) => (await index.reachable(tenant, schema, query))!.ids,
      holders: async (_tenantId, schema, query) => (await index.holders(tenant, schema, query))!.ids,
      pairsPerCheck: () => index.pairsPerCheck,
      walkScale: () => index.walkScale,
    },
    candidates: {
      objectIds: async (_tenantId, namespace, after, limit) => idsAfter(objectIds.get(namespace), after, limit),
      subjectIds: async (_tenantId, namespace, after, limit) => idsAfter(subjectIds.get(namespace), after, limit),
    },
    explainer: { explain: (_tenantId, schema, query) => index.explain(tenant, schema, query, Date.now()) },
    // Nothing is cached: the index is the file's, built once.
    invalidate: () => undefined,
  };
}

const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Each namespace's distinct ids among `refs`, in byte order (the order the API lists them in). */
function idsByNamespace(refs: readonly Ref[]): Map<string, string[]> {
  const ids = new Map<string, Set<string>>();
  for (const { ns, id } of refs) ids.set(ns, (ids.get(ns) ?? new Set()).add(id));
  return new Map([...ids].map(([ns, set]) => [ns, [...set].sort(byteOrder)]));
}

const idsAfter = (ids: readonly string[] = [], after: string | null, limit: number): string[] =>
  ids.filter((id) => after === null || id > after).slice(0, limit);

/** The grants of the file as the API would write them (the object's namespace and relation declared, agents registered), else a ModelFileError listing each refusal. */
function grantsOf({ model, where }: LoadedModel, compiled: CompiledSchema): Triple[] {
  const problems: string[] = [];
  const agents = new Set(model.agents.map((a) => a.external_id));
  const triples = model.grants.flatMap((grant, i) => {
    try {
      const triple = { subject: parseRef(grant.subject, 'subject'), relation: grant.relation, object: parseRef(grant.object, 'object') };
      compiled.assertRelation(triple.object.ns, triple.relation);
      for (const ref of [triple.subject, triple.object]) {
        if (ref.ns === AGENT_NAMESPACE && ref.id !== EVERY_SUBJECT_ID && !agents.has(ref.id))
          throw new DomainError('agent-not-found', `agent ${ref.id} is not in agents`);
      }
      return [triple];
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      problems.push(`${where(['grants', i])}: grants.${i}: ${error.detail}`);
      return [];
    }
  });
  const seen = new Set<string>();
  model.agents.forEach((agent, i) => {
    if (seen.has(agent.external_id)) problems.push(`${where(['agents', i])}: agents.${i}: agent ${agent.external_id} is given twice`);
    seen.add(agent.external_id);
  });
  if (problems.length > 0) throw new ModelFileError(problems.join('\n'));
  return triples;
}

/** Refuses assertions the API would refuse: an object's namespace that does not exist, a relation it does not declare. */
function assertAssertions({ model, where }: LoadedModel, compiled: CompiledSchema): void {
  const problems: string[] = [];
  model.assertions.forEach((assertion, i) => {
    const [namespace, relation] = assertion.check
      ? [parseRef(assertion.check.object, 'object').ns, assertion.check.relation]
      : assertion.objects
        ? [assertion.objects.namespace, assertion.objects.relation]
        : [parseRef(assertion.subjects!.object, 'object').ns, assertion.subjects!.relation];
    try {
      compiled.assertRelation(namespace, relation);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      problems.push(`${where(['assertions', i])}: assertions.${i}: ${error.detail}`);
    }
  });
  if (problems.length > 0) throw new ModelFileError(problems.join('\n'));
}

export interface AssertionFailure {
  /** file:line:column of the assertion. */
  where: string;
  /** What was asked, expected and answered. */
  message: string;
}

/** What running a file's assertions found. */
export interface TestReport {
  assertions: number;
  failures: AssertionFailure[];
}

/** Loads a model file and runs its assertions against the engine over its grants; a ModelFileError when the file cannot be used. */
export async function testModelFile(path: string): Promise<TestReport> {
  const loaded = await loadModelFile(path);
  const compiled = new CompiledSchema(definitionsOf(loaded.model));
  const grants = grantsOf(loaded, compiled);
  assertAssertions(loaded, compiled);
  const scopes = new Map(loaded.model.agents.map((a) => [a.external_id, a.scope]));
  const engine = new AuthorizationEngine(modelChecker(compiled, grants, scopes));
  const failures: AssertionFailure[] = [];
  for (const [i, assertion] of loaded.model.assertions.entries()) {
    const message = await failureOf(engine, assertion);
    if (message !== null) failures.push({ where: loaded.where(['assertions', i]), message });
  }
  return { assertions: loaded.model.assertions.length, failures };
}

/** Why the assertion does not hold, or null when it does. */
async function failureOf(engine: AuthorizationEngine, assertion: Assertion): Promise<string | null> {
  try {
    if (assertion.check) {
      const { subject, relation, object } = assertion.check;
      const allowed = await engine.check(TENANT, assertion.check);
      return allowed === assertion.allowed ? null : `check ${subject} ${relation} ${object}: expected allowed ${assertion.allowed}, got ${allowed}`;
    }
    const [asked, actual] = assertion.objects
      ? [
          `objects ${assertion.objects.namespace} ${assertion.objects.relation} of ${assertion.objects.subject}`,
          await listObjects(engine, assertion.objects),
        ]
      : [
          `subjects ${assertion.subjects!.subject_namespace} ${assertion.subjects!.relation} on ${assertion.subjects!.object}`,
          await listSubjects(engine, assertion.subjects!),
        ];
    const expected = [...new Set(assertion.expect)].sort(byteOrder);
    return expected.join('\n') === actual.join('\n') ? null : `${asked}: expected [${expected.join(', ')}], got [${actual.join(', ')}]`;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    return `${error.type}: ${error.detail}`;
  }
}

/** Every id GET /v1/objects would list, page after page. */
async function listObjects(engine: AuthorizationEngine, query: { namespace: string; subject: string; relation: string }): Promise<string[]> {
  const ids: string[] = [];
  for (let after: string | null = null; ;) {
    const page = await engine.listObjects(TENANT, { ...query, after, limit: PAGE });
    ids.push(...page.ids);
    if (!page.more) return ids;
    after = nextAfter(page)!;
  }
}

/** Every subject GET /v1/subjects would list, page after page. */
async function listSubjects(engine: AuthorizationEngine, query: { object: string; relation: string; subject_namespace: string }): Promise<string[]> {
  const subjects: string[] = [];
  for (let after: string | null = null; ;) {
    const page = await engine.listSubjects(TENANT, {
      object: query.object,
      relation: query.relation,
      subjectNamespace: query.subject_namespace,
      after,
      limit: PAGE,
    });
    subjects.push(...page.ids.map((id) => `${query.subject_namespace}:${id}`));
    if (!page.more) return subjects;
    after = nextAfter(page)!;
  }
}
