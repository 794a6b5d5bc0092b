import type { Adapter, AdapterPayload } from 'oidc-provider';
import { KEY_SCOPES, type ClientRegistration } from '../../../contract/index.ts';
import type { Db } from '../../store/db.ts';
import { findOAuthClient, type OAuthClientRow } from '../../store/oauth-clients.ts';

/** What grantd's client rows add to the library's client metadata (its `extraClientMetadata`). */
interface GrantdClientMetadata {
  /** Null for a client that registered itself and is not bound yet (its first consent binds it). */
  tenant_id: string | null;
  registered: ClientRegistration;
  agent: string | null;
  /** The client's own scopes, what a client_credentials token without `scope` carries. */
  own_scope: string;
}

/** The names of grantd's client metadata, which the library keeps on each of its clients. */
export const GRANTD_CLIENT_METADATA: (keyof GrantdClientMetadata)[] = ['tenant_id', 'registered', 'agent', 'own_scope'];

/** grantd's metadata of a client the library found (its Client, or the client a token names). */
const grantdMetadataOf = (client: object): Partial<GrantdClientMetadata> => client;

/**
 * The tenant of a client the library found. Only a client that registered itself can be of none
 * (boundTenantOfClient), and none such can authenticate where this is asked: it is public, and it
 * has no token before its first consent binds it.
 */
export function tenantOfClient(client: object): string {
  const tenant = grantdMetadataOf(client).tenant_id;
  if (tenant === undefined || tenant === null) throw new Error('an OAuth client without a tenant');
  return tenant;
}

/** The tenant of a client the library found; null while a client that registered itself waits for its first consent. */
export function boundTenantOfClient(client: object): string | null {
  const tenant = grantdMetadataOf(client).tenant_id;
  if (tenant === undefined) throw new Error('an OAuth client without grantd metadata');
  return tenant;
}

/** Whether the client registered itself (RFC 7591) rather than being made by a tenant's admin. */
export const registeredItself = (client: object): boolean => grantdMetadataOf(client).registered === 'dynamic';

/** The agent a client is bound to, if any. */
export const agentOfClient = (client: object): string | null => grantdMetadataOf(client).agent ?? null;

/** The client's own scopes, space-separated ('' for none). */
export const ownScopeOfClient = (client: object): string => grantdMetadataOf(client).own_scope ?? '';

/** What a client may ask for: its scopes, and every scope when it holds `admin`, which implies them all. */
const askableScopes = (scopes: readonly string[]): readonly string[] => (scopes.includes('admin') ? KEY_SCOPES : scopes);

/** The client's metadata as the library reads it (RFC 7591 names). */
function clientMetadata(row: OAuthClientRow) {
  const confidential = row.type === 'confidential';
  const grantTypes =
    row.agentExternalId !== null
      ? ['client_credentials']
      : confidential
        ? ['client_credentials', 'authorization_code', 'refresh_token']
        : ['authorization_code', 'refresh_token'];
  const grantd: GrantdClientMetadata = {
    tenant_id: row.tenantId,
    registered: row.registered as ClientRegistration,
    agent: row.agentExternalId,
    own_scope: row.scopes.join(' '),
  };
  return {
    client_id: row.clientId,
    client_name: row.name,
    // The digest stands in for the secret: the library's compareClientSecret is replaced by one comparing digests (library-seams.ts).
    ...(confidential && row.secretHash ? { client_secret: Buffer.from(row.secretHash).toString('base64url') } : {}),
    token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
    grant_types: row.redirectUris.length > 0 ? grantTypes : grantTypes.filter((type) => type === 'client_credentials'),
    response_types: row.redirectUris.length > 0 && grantTypes.includes('authorization_code') ? ['code'] : [],
    redirect_uris: row.redirectUris,
    // RFC 8252 7.3: a native application's loopback redirect URI may name any port at the request,
    // which the library allows for `native` clients (their http URIs must all be loopback ones).
    ...(isNativeApp(row) ? { application_type: 'native' } : {}),
    // The library refuses a requested scope outside this list: a narrower one than admin is allowed.
    scope: askableScopes(row.scopes).join(' '),
    ...grantd,
  };
}

/** Clients as the library reads them: grantd's rows; they are managed through /v1/oauth/clients only. */
export function clientStore(db: Db): Adapter {
  const managedElsewhere = async (): Promise<never> => {
    throw new Error('OAuth clients are managed through /v1/oauth/clients');
  };
  return {
    find: async (id: string) => {
      const row = await findOAuthClient(db, id);
      return row ? (clientMetadata(row) as AdapterPayload) : undefined;
    },
    upsert: managedElsewhere,
    findByUid: managedElsewhere,
    findByUserCode: managedElsewhere,
    consume: managedElsewhere,
    destroy: managedElsewhere,
    revokeByGrantId: managedElsewhere,
  };
}

/** The host names RFC 8252 8.3 counts as loopback, as the library does. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** A public client that redirects only to loopback http URIs: a native application (RFC 8252). */
function isNativeApp(row: OAuthClientRow): boolean {
  return (
    row.type === 'public' &&
    row.redirectUris.length > 0 &&
    row.redirectUris.every((uri) => {
      const url = URL.parse(uri);
      return url !== null && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
    })
  );
}
