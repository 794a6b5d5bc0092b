import type { KeyVerifier } from '../auth/verifier.ts';
import type { AuthorizationEngine } from '../engine/engine.ts';
import type { SchemaCache } from '../store/schema-cache.ts';

/** A committed write that the caches of every process serving the API must take into account ('grants' covers agents, which are checked like grants). */
export type Change = { kind: 'grants'; tenantId: string } | { kind: 'namespaces'; tenantId: string } | { kind: 'keys' };

/** Makes this process's caches answer the next request from after the change. */
export function forgetBefore(caches: { engine: AuthorizationEngine; schemas: SchemaCache; keys: KeyVerifier }, change: Change): void {
  switch (change.kind) {
    case 'keys':
      return caches.keys.forgetAll();
    case 'namespaces':
      caches.schemas.invalidate(change.tenantId);
      return caches.engine.invalidate(change.tenantId);
    case 'grants':
      return caches.engine.invalidate(change.tenantId);
  }
}
