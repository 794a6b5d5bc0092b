import type { z } from 'zod';
import type { AgentSchema } from '../../contract/agents.ts';
import type { GrantSchema } from '../../contract/grants.ts';
import type { ClientRegistration, KeyScope } from '../../contract/index.ts';
import type { CreatedKeySchema, KeySummarySchema } from '../../contract/keys.ts';
import type { NamespaceSchema } from '../../contract/namespaces.ts';
import type { OAuthClientSchema } from '../../contract/oauth.ts';
import { AGENT_NAMESPACE, formatRef } from '../engine/refs.ts';
import type { AgentRow } from '../store/agents.ts';
import type { StoredGrant } from '../store/grants.ts';
import type { CreatedKey } from '../store/keys.ts';
import type { NamespaceRow } from '../store/namespaces.ts';
import type { OAuthClientRow } from '../store/oauth-clients.ts';

/*
 * The JSON bodies of the API's resources, each built here only, from the store's rows, in the
 * contract's shapes.
 */

export const grantBody = (g: StoredGrant): z.output<typeof GrantSchema> => ({
  subject: formatRef({ ns: g.subjectNs, id: g.subjectId }),
  relation: g.relation,
  object: formatRef({ ns: g.objectNs, id: g.objectId }),
  created_at: g.createdAt.toISOString(),
  not_before: g.notBefore?.toISOString() ?? null,
  expires_at: g.expiresAt?.toISOString() ?? null,
});

export const agentBody = (a: AgentRow): z.output<typeof AgentSchema> => ({
  external_id: a.externalId,
  subject: formatRef({ ns: AGENT_NAMESPACE, id: a.externalId }),
  display_name: a.displayName,
  owner: a.owner,
  scope: a.scope,
  created_at: a.createdAt.toISOString(),
});

export const namespaceBody = (ns: NamespaceRow): z.output<typeof NamespaceSchema> => ({
  name: ns.name,
  relations: ns.relations,
  created_at: ns.createdAt.toISOString(),
  updated_at: ns.updatedAt.toISOString(),
});

/** A new key, with its secret: answered once, by POST /v1/keys and by `grantd tenant create --json`. */
export const createdKeyBody = (key: CreatedKey): z.output<typeof CreatedKeySchema> => ({
  id: key.id,
  prefix: key.prefix,
  secret: key.secret,
  label: key.label,
  scopes: key.scopes,
  created_at: key.createdAt.toISOString(),
});

interface KeySummaryRow {
  id: string;
  prefix: string;
  label: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
}

export const keySummaryBody = (k: KeySummaryRow): z.output<typeof KeySummarySchema> => ({
  id: k.id,
  prefix: k.prefix,
  label: k.label,
  scopes: k.scopes as KeyScope[],
  created_at: k.createdAt.toISOString(),
  last_used_at: k.lastUsedAt?.toISOString() ?? null,
});

export const oauthClientBody = (c: OAuthClientRow): z.output<typeof OAuthClientSchema> => ({
  client_id: c.clientId,
  name: c.name,
  type: c.type as 'confidential' | 'public',
  redirect_uris: c.redirectUris,
  scopes: c.scopes as KeyScope[],
  agent: c.agentExternalId,
  registered: c.registered as ClientRegistration,
  created_at: c.createdAt.toISOString(),
});
