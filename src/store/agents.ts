import { AGENT_NAMESPACE } from '../engine/refs.ts';
import { DomainError } from '../errors.ts';
import type { Db } from './db.ts';
import { isUniqueViolation } from './errors.ts';
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
  /** The agent's OAuth clients, deleted with every token of theirs. */
  clientsRemoved: number;
}

/**
 * The killswitch: the agent, every grant naming it, and its OAuth clients with their tokens, in one transaction. Grant writes hold a
 * KEY SHARE lock on the agents they name (see lockAgents), so deleting the agent row waits for
 * them to commit, and the grant delete that follows, in a new snapshot, sees what they wrote.
 */
export async function deleteAgent(db: Db, tenantId: string, externalId: string): Promise<AgentDeletion | null> {
  return transaction(db, async (tx) => {
    // Before the agent, whose row their foreign key would otherwise delete them with, uncounted.
    const clients = await tx.oAuthClient.deleteMany({ where: { tenantId, agentExternalId: externalId } });
    const { count } = await tx.agent.deleteMany({ where: { tenantId, externalId } });
    if (count === 0) return null;
    const removed = await tx.grant.deleteMany({
      where: {
        tenantId,
        OR: [
          { subjectNs: AGENT_NAMESPACE, subjectId: externalId },
          { objectNs: AGENT_NAMESPACE, objectId: externalId },
        ],
      },
    });
    return { grantsRemoved: removed.count, clientsRemoved: clients.count };
  });
}
