import type { KeyVerifier } from '../auth/verifier.ts';
import type { AuthorizationEngine } from '../engine/engine.ts';
import type { SchemaCache } from '../store/schema-cache.ts';

/**
 * A committed write that the caches of every process serving the API must take into account ('grants' covers agents, which are
 * checked like grants). 'keys' names the tenant whose keys or tokens ended, or none when the writer cannot tell (every tenant's are forgotten).
 */
export type Change = { kind: 'grants'; tenantId: string } | { kind: 'namespaces'; tenantId: string } | { kind: 'keys'; tenantId?: string };

/**
 * What a read of the tenant at a state this process has not reached drops (docs/consistency.md#reading-at-a-revision):
 * what a write of the tenant here would, and the tenant's keys. No other tenant's.
 */
export function forgetTenant(caches: { engine: AuthorizationEngine; schemas: SchemaCache; keys: KeyVerifier }, tenantId: string): void {
  forgetBefore(caches, { kind: 'namespaces', tenantId });
  forgetBefore(caches, { kind: 'keys', tenantId });
}

/** Makes this process's caches answer the next request from after the change. */
export function forgetBefore(caches: { engine: AuthorizationEngine; schemas: SchemaCache; keys: KeyVerifier }, change: Change): void {
  switch (change.kind) {
    case 'keys':
      return change.tenantId === undefined ? caches.keys.forgetAll() : caches.keys.forgetTenant(change.tenantId);
    case 'namespaces':
      caches.schemas.invalidate(change.tenantId);
      return caches.engine.invalidate(change.tenantId);
    case 'grants':
      return caches.engine.invalidate(change.tenantId);
  }
}
