import fc from 'fast-check';
import { expect } from 'vitest';
import { windowOf, type GrantWindow } from '../../src/engine/grant-window.ts';
import type { RelationDefinitions } from '../../src/engine/schema.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { applyBatch } from '../../src/store/grants.ts';
import { referenceCheck, SCOPES, type Triple } from './reference.ts';
import { tenantGraph } from './tenant-graph.ts';

/**
 * The small world of the property tests (property.test.ts, property-rules.test.ts): random tenants
 * of two declared namespaces, doc and folder, an open one, team, and two agents, written through the
 * store, and the reference's answers on them.
 */

export const DECLARED = ['doc', 'folder'];
export const IDS: Record<string, string[]> = {
  user: ['u0', 'u1', 'u2'],
  agent: ['a0', 'a1'],
  team: ['t0', 't1'],
  folder: ['f0', 'f1', 'f2'],
  doc: ['d0', 'd1', 'd2'],
};
export const REFS = Object.entries(IDS).flatMap(([ns, ids]) => ids.map((id) => `${ns}:${id}`));
/** The subjects' namespaces a subjects listing is asked for, and the objects of declared namespaces. */
export const SUBJECT_NAMESPACES = ['user', 'agent', 'team', 'folder'];
export const OBJECTS = REFS.filter((r) => DECLARED.some((ns) => r.startsWith(`${ns}:`)));

export interface TenantModel {
  doc: RelationDefinitions;
  folder: RelationDefinitions;
  grants: Triple[];
  /** The scopes of agents a0 (always registered) and a1. */
  scopes: [string[], string[]];
  a1Registered: boolean;
}

/** Tenants of the given definitions (for doc and folder each) and grants. */
export function tenantArbOf(relations: fc.Arbitrary<RelationDefinitions>, triple: fc.Arbitrary<Triple>): fc.Arbitrary<TenantModel> {
  return fc.record({
    doc: relations,
    folder: relations,
    grants: fc.uniqueArray(triple, { maxLength: 40, selector: (t) => t.join(' ') }),
    scopes: fc.tuple(fc.subarray(SCOPES), fc.subarray(SCOPES)),
    a1Registered: fc.boolean(),
  });
}

export const registeredAgents = (model: TenantModel): string[] => (model.a1Registered ? ['a0', 'a1'] : ['a0']);

/** The reference's answers on the model's tenant. */
export function reference(model: TenantModel) {
  const registered = registeredAgents(model);
  const scopes = new Map(registered.map((id, i) => [id, model.scopes[i]!]));
  return referenceCheck({ definitions: { doc: model.doc, folder: model.folder }, grants: validGrants(model), scopes });
}

/** The generated grants the service accepts: declared relations only, agents registered (agent:* names every agent, none in particular). */
export function validGrants(model: TenantModel): Triple[] {
  const defs: Record<string, RelationDefinitions> = { doc: model.doc, folder: model.folder };
  const registered = new Set([...registeredAgents(model), '*']);
  return model.grants.filter(([s, r, o]) => {
    const ons = o.split(':')[0]!;
    if (DECLARED.includes(ons) && !Object.hasOwn(defs[ons]!, r)) return false;
    return !s.startsWith('agent:') || registered.has(s.slice('agent:'.length));
  });
}

/** A tenant of the given model, written while `services` holds it in memory. */
export async function writeTenant(services: AppDeps, model: TenantModel) {
  const g = await tenantGraph(services);
  expect(await services.heldTenants.load(g.tenantId)).toBe(true);
  await g.namespace('doc', model.doc);
  await g.namespace('folder', model.folder);
  await g.namespace('team');
  await g.agent('a0', model.scopes[0]);
  if (model.a1Registered) await g.agent('a1', model.scopes[1]);
  const grants = validGrants(model);
  if (grants.length > 0) await g.grant(...grants);
  return { g, grants };
}

/** A window bound, in seconds after the test's start (null: open), one pair for each generated grant. */
export const windowBoundsArb = fc.array(
  fc.tuple(fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }), fc.option(fc.integer({ min: 0, max: 3 }), { nil: null })),
  {
    minLength: 40,
    maxLength: 40,
  },
);
/** Each window bound and the millisecond before it, in order: windows open and close as a test goes. */
export const WINDOW_INSTANTS = [0, 999, 1000, 1999, 2000, 2999, 3000, 3999];

/** The model's valid grants, each with its window of bounds (seconds after T), written to the tenant through `services`' store. */
export async function grantWithWindows(
  services: AppDeps,
  tenantId: string,
  model: TenantModel,
  bounds: readonly (readonly [number | null, number | null])[],
  T: number,
): Promise<{ triple: Triple; window: GrantWindow | null }[]> {
  const grants = validGrants(model).map((triple, i) => {
    const [start, end] = bounds[i]!;
    // A window must end after it starts: such a pair keeps its start only.
    const expiresAt = end === null || (start !== null && end <= start) ? null : T + 1000 * end;
    return { triple, window: windowOf(start === null ? null : T + 1000 * start, expiresAt) };
  });
  if (grants.length > 0) {
    const writes = await services.engine.parseTriples(
      tenantId,
      grants.map(({ triple: [subject, relation, object] }) => ({ subject, relation, object })),
      true,
    );
    await applyBatch(
      services.db,
      tenantId,
      writes.map((w, i) => ({ ...w, window: grants[i]!.window })),
      [],
    );
    services.engine.invalidate(tenantId);
  }
  return grants;
}
