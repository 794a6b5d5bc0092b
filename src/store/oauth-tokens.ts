import type { Db } from './db.ts';
import type { AuthorizationCodePrincipal, ClientCredentialsPrincipal } from '../auth/principal.ts';
import { signingKeyIsLive } from './keys.ts';
import { digestOf } from './oauth-records.ts';

/** The digest an access token is stored under. */
export const accessTokenDigest = (token: string): string => digestOf(token);

/**
 * The live access token stored under this digest, as the principal it speaks for: the token's
 * scopes in its client's tenant, rate-limited as its client (`keyId` is the client_id). A token of
 * a deleted client is gone with it (foreign key); an expired one, one whose grant has ended (a
 * replayed code or refresh token ends it, and a token saved just after that stays behind), or one
 * whose signing-in key is revoked, is refused.
 */
export async function findAccessToken(db: Db, digest: string): Promise<ClientCredentialsPrincipal | AuthorizationCodePrincipal | null> {
  const row = await db.oAuthRecord.findFirst({
    where: { kind: { in: ['AccessToken', 'ClientCredentials'] }, id: digest, expiresAt: { gt: new Date() } },
    select: {
      payload: true,
      grantId: true,
      accountId: true,
      audience: true,
      expiresAt: true,
      client: { select: { clientId: true, tenantId: true, agentExternalId: true, tenant: { select: { cursorSecret: true } } } },
    },
  });
  // A client of no tenant (it registered itself and was never bound) has no token; were one stored, it speaks for no tenant.
  if (!row?.client?.tenantId || !row.client.tenant) return null;
  if (row.grantId !== null && !(await grantIsLive(db, row.grantId))) return null;
  if (row.accountId !== null && !(await signingKeyIsLive(db, row.accountId, row.client.tenantId))) return null;
  const scope = (row.payload as { scope?: unknown }).scope;
  // As introspection's sub: the agent, or the key that signed in for an authorization-code grant.
  const sub = row.client.agentExternalId !== null ? `agent:${row.client.agentExternalId}` : (row.accountId ?? undefined);
  const token = {
    keyId: row.client.clientId,
    clientId: row.client.clientId,
    ...(sub === undefined ? {} : { sub }),
    ...(row.audience === null ? {} : { audience: row.audience }),
    tenantId: row.client.tenantId,
    scopes: typeof scope === 'string' ? scope.split(' ').filter(Boolean) : [],
    cursorSecret: Buffer.from(row.client.tenant.cursorSecret),
    // The query asks for an expiry in the future.
    expiresAt: row.expiresAt!.getTime(),
  };
  // A token of the authorization-code grant names the key that signed in for it; one of client_credentials, none.
  return row.accountId === null ? { kind: 'client_credentials', ...token } : { kind: 'authorization_code', ...token, signingKeyId: row.accountId };
}

/** Whether the library's grant is stored and unexpired: the tokens issued under it live only as long. */
async function grantIsLive(db: Db, grantId: string): Promise<boolean> {
  const grant = await db.oAuthRecord.findUnique({ where: { kind_id: { kind: 'Grant', id: grantId } }, select: { expiresAt: true } });
  return grant !== null && (grant.expiresAt === null || grant.expiresAt.getTime() > Date.now());
}
