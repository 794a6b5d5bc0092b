import { errors } from 'oidc-provider';
import { KEY_SCOPES } from '../../../contract/index.ts';

/**
 * The names in a `scope` parameter that are no scope of grantd. The library drops such names
 * silently; RFC 6749 5.2 and 4.1.2.1 call a scope naming one `invalid_scope`.
 */
export function unknownScopes(scope: unknown): string[] {
  if (typeof scope !== 'string') return [];
  return scope.split(' ').filter((name) => name !== '' && !(KEY_SCOPES as readonly string[]).includes(name));
}

export const unknownScopeError = (names: string[]) =>
  new errors.InvalidScope(`requested scope is not a scope of grantd (${KEY_SCOPES.join(', ')})`, names.join(' '));

/** 429 on the token endpoint, as RFC 6749 errors are shaped (the contract's and docs/oauth.md's). */
export class RateLimited extends errors.OIDCProviderError {
  constructor(description: string) {
    super(429, 'temporarily_unavailable');
    this.error_description = description;
  }
}
