import { AGENT_NAMESPACE } from '../engine/refs.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { isUniqueViolation } from './errors.ts';
import { revokeKeys } from './keys.ts';
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

/**
 * The killswitch, in one transaction: the agent; every grant naming it; its OAuth clients and those
 * made on its authority, with their tokens; the API keys made on its authority, revoked (with the
 * OAuth grants they signed in for). It first locks the agent's row FOR UPDATE, which waits for the
 * grant writes and the creations of keys and clients that hold it KEY SHARE (lockRegisteredAgents
 * in agent-locks.ts, a client's foreign key) to commit; every statement after it, in a new
 * snapshot, sees what they wrote. Credentials made on the agent's authority are found by
 * made_by_agents; those of a later agent of the same id never carry this one's name, as none can be
 * made once it is gone.
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
