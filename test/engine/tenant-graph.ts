import { AuthorizationEngine } from '../../src/engine/engine.ts';
import { nextAfter, type Page } from '../../src/engine/listing-pages.ts';
import type { RelationDefinitions } from '../../src/engine/schema.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { createAgent, deleteAgent } from '../../src/store/agents.ts';
import { applyBatch } from '../../src/store/grants.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { newTenant } from '../helpers.ts';

/** A fresh tenant and terse verbs to build and query its graph through the engine and the store's functions. */
export async function tenantGraph(services: AppDeps) {
  const { id: tenantId, adminKey } = await newTenant(services);
  const { db, engine, schemas } = services;
  // The ways a subject that reaches a lot is listed: candidates checked in order, page after page
  // (reaching densely), or a first batch of candidates and then a walk after all (reaching sparsely).
  const listersOver = (checker: AuthorizationEngine['checker']) => ({
    walk: new AuthorizationEngine(checker),
    scan: new AuthorizationEngine(checker, { listingBudget: 0, maxListingBudget: 0 }),
    sample: new AuthorizationEngine(checker, { listingBudget: 0 }),
  });
  const triples = (list: [string, string, string][]) => list.map(([subject, relation, object]) => ({ subject, relation, object }));
  return {
    tenantId,
    /** A key of the tenant with the scope `admin`, for requests to an app of `services`. */
    adminKey,
    async namespace(name: string, relations: RelationDefinitions | null = null) {
      await createNamespace(db, tenantId, name, relations);
      schemas.invalidate(tenantId);
      engine.invalidate(tenantId);
    },
    async grant(...list: [string, string, string][]) {
      await applyBatch(db, tenantId, await engine.parseTriples(tenantId, triples(list), true), []);
      engine.invalidate(tenantId);
    },
    async revoke(...list: [string, string, string][]) {
      await applyBatch(db, tenantId, [], await engine.parseTriples(tenantId, triples(list), false));
      engine.invalidate(tenantId);
    },
    async agent(externalId: string, scope: string[]) {
      await createAgent(db, tenantId, { externalId, displayName: null, owner: null, scope });
      engine.invalidate(tenantId);
    },
    /** The killswitch: the number of grants it removed, or null when there was no such agent. */
    async kill(externalId: string) {
      const removed = await deleteAgent(db, tenantId, externalId);
      engine.invalidate(tenantId);
      return removed === null ? null : removed.grantsRemoved;
    },
    check: (subject: string, relation: string, object: string) => engine.check(tenantId, { subject, relation, object }),
    bulk: (list: [string, string, string][]) => engine.checkBulk(tenantId, triples(list)),
    /** Every id the subject reaches, walking all pages of the given size, the given way, on this services' store or another's. */
    async listAll(
      subject: string,
      namespace: string,
      relation: string,
      pageSize = 1000,
      { via = 'walk', on = services }: { via?: 'walk' | 'scan' | 'sample'; on?: AppDeps } = {},
    ) {
      const lister = listersOver(on.engine.checker)[via];
      return allIds((after) => lister.listObjects(tenantId, { subject, namespace, relation, after, limit: pageSize }));
    },
    /** Every subject of the namespace holding the relation on the object, walking all pages of the given size, the given way. */
    async subjectsAll(
      object: string,
      relation: string,
      subjectNamespace: string,
      pageSize = 1000,
      { via = 'walk', on = services }: { via?: 'walk' | 'scan' | 'sample'; on?: AppDeps } = {},
    ) {
      const lister = listersOver(on.engine.checker)[via];
      return allIds((after) => lister.listSubjects(tenantId, { object, relation, subjectNamespace, after, limit: pageSize }));
    },
    explain: (subject: string, relation: string, object: string, on = services) => on.engine.explain(tenantId, { subject, relation, object }),
  };
}

/** Every id of a listing, page after page, each page starting where the one before ended (nextAfter). */
async function allIds(pageAfter: (after: string | null) => Promise<Page>): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (;;) {
    const page = await pageAfter(after);
    ids.push(...page.ids);
    if (!page.more) return ids;
    after = nextAfter(page)!;
  }
}
