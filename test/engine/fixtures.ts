import type { RelationDefinitions } from '../../src/engine/schema.ts';
import { parseTriples } from '../../src/engine/engine.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { createAgent, deleteAgent } from '../../src/store/agents.ts';
import { applyBatch } from '../../src/store/grants.ts';
import { createNamespace } from '../../src/store/namespaces.ts';
import { newTenant } from '../helpers.ts';

/** A fresh tenant and terse verbs to build and query its graph through the engine and the store. */
export async function tenantGraph(services: AppDeps) {
  const { id: tenantId } = await newTenant(services);
  const { db, engine, schemas } = services;
  const triples = (list: Array<[string, string, string]>) => list.map(([subject, relation, object]) => ({ subject, relation, object }));
  return {
    tenantId,
    async namespace(name: string, relations: RelationDefinitions | null = null) {
      await createNamespace(db, tenantId, name, relations);
      schemas.invalidate(tenantId);
    },
    async grant(...list: Array<[string, string, string]>) {
      await applyBatch(db, tenantId, await parseTriples(engine.store, tenantId, triples(list), true), []);
    },
    async revoke(...list: Array<[string, string, string]>) {
      await applyBatch(db, tenantId, [], await parseTriples(engine.store, tenantId, triples(list), false));
    },
    agent: (externalId: string, scope: string[]) => createAgent(db, tenantId, { externalId, displayName: null, owner: null, scope }),
    kill: (externalId: string) => deleteAgent(db, tenantId, externalId),
    check: (subject: string, relation: string, object: string) => engine.check(tenantId, { subject, relation, object }),
    bulk: (list: Array<[string, string, string]>) => engine.checkBulk(tenantId, triples(list)),
    /** Every id the subject reaches, walking all pages of the given size. */
    async listAll(subject: string, namespace: string, relation: string, pageSize = 1000) {
      const ids: string[] = [];
      let after: string | null = null;
      for (;;) {
        const page = await engine.listObjects(tenantId, { subject, namespace, relation, after, limit: pageSize });
        ids.push(...page.ids);
        if (!page.more) return ids;
        after = page.ids.at(-1)!;
      }
    },
  };
}

export const DOCUMENT_RELATIONS: RelationDefinitions = {
  parent: {},
  owner: {},
  editor: { includes: ['owner'] },
  viewer: { includes: ['editor', 'parent->viewer'] },
};

export const FOLDER_RELATIONS: RelationDefinitions = {
  parent: {},
  viewer: { includes: ['parent->viewer'] },
};
