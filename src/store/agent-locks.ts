import type { Prisma } from './prisma/client.ts';

/**
 * Which of the tenant's agents `externalIds` are registered, each of them locked (KEY SHARE) until
 * the transaction ends: what a grant write names (grants.ts) and the authority a credential is made
 * on (authority.ts). The killswitch's FOR UPDATE of the agent's row (deleteAgent in agents.ts)
 * waits for the lock, so it sees what such a transaction wrote, and the transaction does not see an
 * agent already killed.
 */
export async function lockRegisteredAgents(tx: Prisma.TransactionClient, tenantId: string, externalIds: readonly string[]): Promise<Set<string>> {
  const rows = await tx.$queryRaw<{ external_id: string }[]>`
    SELECT external_id FROM agents
    WHERE tenant_id = ${tenantId}::uuid AND external_id = ANY(${externalIds}::text[])
    FOR KEY SHARE`;
  return new Set(rows.map((row) => row.external_id));
}
