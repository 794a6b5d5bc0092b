import { z } from 'zod';

/** Capabilities an API key can carry; `admin` implies every other one. */
export const KEY_SCOPES = ['check:read', 'grant:read', 'grant:write', 'admin'] as const;
export const KeyScopeSchema = z.enum(KEY_SCOPES);
export type KeyScope = z.infer<typeof KeyScopeSchema>;

/**
 * Whether a route reads (it takes Grantd-Consistency) or writes (it answers with Grantd-Revision):
 * docs/consistency.md#revisions.
 */
export type Revisions = 'reads' | 'writes';

/** Route metadata read by the server's authentication middleware and by the OpenAPI generator. */
export const requires = (scope: KeyScope, revisions?: Revisions): RouteMetadata => (revisions ? { scope, revisions } : { scope });
export interface RouteMetadata {
  scope: KeyScope;
  revisions?: Revisions;
}
