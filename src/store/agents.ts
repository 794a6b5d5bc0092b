import { AGENT_NAMESPACE } from '../engine/refs.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { isUniqueViolation } from './errors.ts';
import { revokeKeys, type KeyPrincipal } from './keys.ts';
import type { Prisma } from './prisma/client.ts';
import { transaction } from './transaction.ts';

export interface AgentRow {
  externalId: string;
  displayName: string | null;
  owner: string | null;
  scope: string[];
  createdAt: Date;
}

const agentColumns = { externalId: true, displayName: true, owner: true, scope: true, createdAt: true } as const;

export async function createAgent(
  db: Db,
  tenantId: string,
  agent: { externalId: string; displayName: string | null; owner: string | null; scope: string[] },
): Promise<AgentRow> {
  try {
    return await transaction(db, (tx) => tx.agent.create({ data: { tenantId, ...agent }, select: agentColumns }));
  } catch (error) {
    if (isUniqueViolation(error)) {
      throw new DomainError('agent-exists', `agent ${agent.externalId} already exists`);
    }
    throw error;
  }
}

export const getAgent = (db: Db, tenantId: string, externalId: string): Promise<AgentRow | null> =>
  db.agent.findUnique({ where: { tenantId_externalId: { tenantId, externalId } }, select: agentColumns });

export const listAgents = (db: Db, tenantId: string, after: string | null, take: number): Promise<AgentRow[]> =>
  db.agent.findMany({
    where: { tenantId, ...(after === null ? {} : { externalId: { gt: after } }) },
    orderBy: { externalId: 'asc' },
    take,
    select: agentColumns,
  });

/** What the killswitch removed. */
export interface AgentDeletion {
  grantsRemoved: number;
  /** The OAuth clients deleted with every token of theirs: the agent's own, and those made on its authority. */
  clientsRemoved: number;
  /** The API keys made on its authority, revoked. */
  keysRevoked: number;
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
export async function authorityOf(
  tx: Prisma.TransactionClient,
  principal: Pick<KeyPrincipal, 'keyId' | 'tenantId' | 'clientId' | 'signingKeyId'>,
): Promise<string[]> {
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

/**
 * The killswitch, in one transaction: the agent; every grant naming it; its OAuth clients and those
 * made on its authority, with their tokens; the API keys made on its authority, revoked (with the
 * OAuth grants they signed in for). It first locks the agent's row FOR UPDATE, which waits for the
 * grant writes and the creations of keys and clients that hold it KEY SHARE (lockAgents in grants.ts,
 * authorityOf, a client's foreign key) to commit; every statement after it, in a new snapshot, sees
 * what they wrote. Credentials made on the agent's authority are found by made_by_agents; those of a
 * later agent of the same id never carry this one's name, as none can be made once it is gone.
 */
export async function deleteAgent(db: Db, tenantId: string, externalId: string): Promise<AgentDeletion | null> {
  return transaction(db, async (tx) => {
    const held = await tx.$queryRaw<unknown[]>`
      SELECT 1 FROM agents WHERE tenant_id = ${tenantId}::uuid AND external_id = ${externalId} FOR UPDATE`;
    if (held.length === 0) return null;
    // Before the agent, whose row their foreign key would otherwise delete them with, uncounted.
    const clients = await tx.oAuthClient.deleteMany({
      where: { tenantId, OR: [{ agentExternalId: externalId }, { madeByAgents: { has: externalId } }] },
    });
    const keys = await revokeKeys(tx, { tenantId, madeByAgents: { has: externalId } });
    await tx.agent.deleteMany({ where: { tenantId, externalId } });
    const removed = await tx.grant.deleteMany({
      where: {
        tenantId,
        OR: [
          { subjectNs: AGENT_NAMESPACE, subjectId: externalId },
          { objectNs: AGENT_NAMESPACE, objectId: externalId },
        ],
      },
    });
    return { grantsRemoved: removed.count, clientsRemoved: clients.count, keysRevoked: keys.length };
  });
}
