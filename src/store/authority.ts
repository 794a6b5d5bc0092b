import { DomainError } from '../errors.ts';
import type { Prisma } from './prisma/client.ts';

/** Who a key or OAuth client is made by: the parts of a principal (KeyPrincipal) that name its credentials. */
export interface Authority {
  /** The API key's id; for an OAuth access token, its client's id (what rate limits count by). */
  keyId: string;
  tenantId: string;
  /** For an access token: its client. */
  clientId?: string;
  /** For an authorization-code grant's access token: the API key that signed in for it. */
  signingKeyId?: string;
}

/** The creating credential was revoked or deleted (its agent's killswitch, say) while the request ran. */
const credentialEnded = () => new DomainError('unauthenticated', 'the API key or access token was revoked while the request ran');

/**
 * The agents on whose authority `principal` acts, for a key or OAuth client it makes to record
 * (made_by_agents): the agent its access token speaks for, and every agent the credential behind
 * the request was itself made on (the key; the token's client; the key that signed in for the
 * token's grant), so a chain of credentials stays its first agent's. Those agents are locked (KEY
 * SHARE) until the transaction ends, as grant writes lock the agents they name: a killswitch waits
 * for the creation to commit, then ends what it made. A credential revoked or deleted meanwhile, or
 * an agent killed, makes the creation a 401: nothing is made on an authority that has ended.
 */
export async function authorityOf(tx: Prisma.TransactionClient, principal: Authority): Promise<string[]> {
  const { tenantId } = principal;
  const agents = new Set<string>();
  const addKey = async (id: string) => {
    const key = await tx.apiKey.findFirst({ where: { id, tenantId, revokedAt: null }, select: { madeByAgents: true } });
    if (!key) throw credentialEnded();
    for (const agent of key.madeByAgents) agents.add(agent);
  };
  if (principal.clientId === undefined) {
    await addKey(principal.keyId);
  } else {
    const client = await tx.oAuthClient.findFirst({
      where: { clientId: principal.clientId, tenantId },
      select: { agentExternalId: true, madeByAgents: true },
    });
    if (!client) throw credentialEnded();
    if (client.agentExternalId !== null) agents.add(client.agentExternalId);
    for (const agent of client.madeByAgents) agents.add(agent);
    if (principal.signingKeyId !== undefined) await addKey(principal.signingKeyId);
  }
  const wanted = [...agents].sort();
  if (wanted.length === 0) return wanted;
  const found = await tx.$queryRaw<{ external_id: string }[]>`
    SELECT external_id FROM agents
    WHERE tenant_id = ${tenantId}::uuid AND external_id = ANY(${wanted}::text[])
    FOR KEY SHARE`;
  if (found.length !== wanted.length) throw credentialEnded();
  return wanted;
}
