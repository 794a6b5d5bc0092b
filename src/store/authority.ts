import { DomainError } from '../errors.ts';
import type { Principal } from '../auth/principal.ts';
import { lockRegisteredAgents } from './agent-locks.ts';
import type { Prisma } from './prisma/client.ts';

/** The parts of a principal that name its credentials, kind by kind. */
type CredentialsOf<P> = P extends Principal ? Pick<P, Extract<keyof P, 'kind' | 'keyId' | 'tenantId' | 'clientId' | 'signingKeyId'>> : never;

/** Who a key or OAuth client is made by: the parts of a principal that name its credentials. */
export type Authority = CredentialsOf<Principal>;

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
  if (principal.kind === 'api_key') {
    await addKey(principal.keyId);
  } else {
    const client = await tx.oAuthClient.findFirst({
      where: { clientId: principal.clientId, tenantId },
      select: { agentExternalId: true, madeByAgents: true },
    });
    if (!client) throw credentialEnded();
    if (client.agentExternalId !== null) agents.add(client.agentExternalId);
    for (const agent of client.madeByAgents) agents.add(agent);
    if (principal.kind === 'authorization_code') await addKey(principal.signingKeyId);
  }
  const wanted = [...agents].sort();
  if (wanted.length === 0) return wanted;
  if ((await lockRegisteredAgents(tx, tenantId, wanted)).size !== wanted.length) throw credentialEnded();
  return wanted;
}
