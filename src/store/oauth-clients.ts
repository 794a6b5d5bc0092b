import type { Logger } from 'pino';
import type { KeyScope } from '../../contract/index.ts';
import { SYSTEM_CLOCK, type WallClock } from '../engine/grant-window.ts';
import { hashSecret, randomBase62 } from '../auth/secrets.ts';
import { DomainError } from '../errors.ts';
import { authorityOf, type Authority } from './authority.ts';
import type { Db } from './db.ts';
import { isForeignKeyViolation } from './errors.ts';
import type { Prisma } from './prisma/client.ts';
import { startSweep } from './sweep.ts';
import { insertTenant, type CreatedTenant } from './tenants.ts';
import { transaction } from './transaction.ts';

export const CLIENT_SECRET_PREFIX = 'svc_cs_';
/** 43 base62 characters carry 256 random bits, as an API key's do. */
const CLIENT_SECRET_LENGTH = 43;
/** The shape of every client id grantd makes; anything else names no client. */
export const CLIENT_ID_PATTERN = /^oc_[A-Za-z0-9]{20}$/;

/** How long a client that registered itself may wait for its first consent before the sweep deletes it. */
export const UNBOUND_CLIENT_TTL_MS = 24 * 3600 * 1000;

export interface OAuthClientRow {
  clientId: string;
  /** Null while a client that registered itself waits for its first consent (bindOAuthClient). */
  tenantId: string | null;
  secretHash: Uint8Array | null;
  name: string;
  type: string;
  redirectUris: string[];
  scopes: string[];
  agentExternalId: string | null;
  /** The agents on whose authority it was registered; their killswitches delete it. */
  madeByAgents: string[];
  /** admin or dynamic (ClientRegistration): by a tenant's admin, or by itself (RFC 7591). */
  registered: string;
  createdAt: Date;
}

const newClientId = (): string => `oc_${randomBase62(20)}`;

export interface NewOAuthClient {
  name: string;
  type: 'confidential' | 'public';
  redirectUris: string[];
  scopes: KeyScope[];
  agent: string | null;
}

/**
 * Registers a client on `principal`'s authority, recording the agents behind it (authorityOf) so
 * that their killswitches delete it; a confidential one gets a secret, returned here only (its
 * SHA-256 is what is stored).
 */
export async function createOAuthClient(
  db: Db,
  principal: Authority,
  client: NewOAuthClient,
): Promise<{ row: OAuthClientRow; secret: string | null }> {
  try {
    return await transaction(db, (tx) => insertOAuthClient(tx, principal, client));
  } catch (error) {
    // The agent's row is the foreign key's: absent, or deleted by a killswitch meanwhile.
    if (isForeignKeyViolation(error)) {
      throw new DomainError('agent-not-found', `agent ${client.agent ?? ''} is not registered`);
    }
    throw error;
  }
}

/** createOAuthClient's work, in a transaction of the caller's. */
async function insertOAuthClient(
  tx: Prisma.TransactionClient,
  principal: Authority,
  client: NewOAuthClient,
): Promise<{ row: OAuthClientRow; secret: string | null }> {
  const secret = client.type === 'confidential' ? CLIENT_SECRET_PREFIX + randomBase62(CLIENT_SECRET_LENGTH) : null;
  const row = await tx.oAuthClient.create({
    data: {
      madeByAgents: await authorityOf(tx, principal),
      clientId: newClientId(),
      tenantId: principal.tenantId,
      secretHash: secret === null ? null : new Uint8Array(hashSecret(secret)),
      name: client.name,
      type: client.type,
      redirectUris: [...new Set(client.redirectUris)],
      scopes: [...new Set(client.scopes)],
      agentExternalId: client.agent,
    },
  });
  return { row, secret };
}

/** A public client of no tenant yet: it registered itself, and its first consent binds it. */
export interface NewDynamicClient {
  name: string;
  redirectUris: string[];
  scopes: KeyScope[];
}

/** Registers a client on no one's authority (RFC 7591): public, of no tenant until bindOAuthClient. */
export function registerDynamicClient(db: Db, client: NewDynamicClient): Promise<OAuthClientRow> {
  return db.oAuthClient.create({
    data: {
      clientId: newClientId(),
      tenantId: null,
      name: client.name,
      type: 'public',
      redirectUris: [...new Set(client.redirectUris)],
      scopes: [...new Set(client.scopes)],
      registered: 'dynamic',
    },
  });
}

/**
 * Binds a client that registered itself to the tenant, for good: true when it is now the tenant's
 * (bound here, or before to the same tenant), false when it is another tenant's or gone. The
 * update's row lock orders simultaneous first consents: the later one sees the earlier's tenant.
 */
export async function bindOAuthClient(db: Db, tenantId: string, clientId: string): Promise<boolean> {
  if (!CLIENT_ID_PATTERN.test(clientId)) return false;
  return transaction(db, async (tx) => {
    const { count } = await tx.oAuthClient.updateMany({ where: { clientId, tenantId: null, registered: 'dynamic' }, data: { tenantId } });
    return count === 1 || (await tx.oAuthClient.count({ where: { clientId, tenantId } })) === 1;
  });
}

/**
 * Deletes, across tenants, clients that registered themselves at or before `registeredBefore` and
 * were never bound, at most `limit`: nothing was ever issued to them. Rows another transaction
 * holds (a binding under way) are left for the next sweep.
 */
export function sweepUnboundClients(db: Db, registeredBefore: Date, limit: number): Promise<number> {
  return db.$executeRaw`
    DELETE FROM oauth_clients WHERE client_id = ANY(ARRAY(
      SELECT client_id FROM oauth_clients WHERE tenant_id IS NULL AND created_at <= ${registeredBefore}
      LIMIT ${limit} FOR UPDATE SKIP LOCKED))
    AND tenant_id IS NULL`;
}

/** Sweeps unbound clients older than UNBOUND_CLIENT_TTL_MS every `intervalMs` in the background (startSweep); returns what stops it. */
export function startUnboundClientSweep(
  db: Db,
  { intervalMs = UNBOUND_SWEEP_INTERVAL_MS, clock = SYSTEM_CLOCK }: { intervalMs?: number; clock?: WallClock },
  logger: Logger,
): () => void {
  return startSweep(
    { intervalMs, chunk: UNBOUND_SWEEP_CHUNK, what: 'OAuth clients never bound to a tenant' },
    () => sweepUnboundClients(db, new Date(clock.now() - UNBOUND_CLIENT_TTL_MS), UNBOUND_SWEEP_CHUNK),
    logger,
  );
}

/** Clients one statement of the sweep deletes at most. */
const UNBOUND_SWEEP_CHUNK = 1000;
/** How often a node sweeps: an unbound client can do nothing meanwhile, so this only bounds how long it takes room. */
const UNBOUND_SWEEP_INTERVAL_MS = 60_000;

/** The name of the console's client that grantd makes for tenant `default` at its creation (docs/console.md). */
export const CONSOLE_CLIENT_NAME = 'grantd console';

/**
 * A tenant (tenant `default`, at the first start) made with its console client (public, `admin`,
 * its redirect URI the console's callback, which GRANTD_PUBLIC_URL decides; made by the tenant's
 * first admin key), in one transaction: a start that failed between the two would leave a tenant
 * without the console client docs/console.md promises, and the next start, finding a tenant, makes none.
 */
export const createTenantWithConsoleClient = (db: Db, name: string, callback: string): Promise<CreatedTenant & { consoleClientId: string }> =>
  transaction(db, async (tx) => {
    const created = await insertTenant(tx, name);
    const { row } = await insertOAuthClient(
      tx,
      { kind: 'api_key', tenantId: created.tenant.id, keyId: created.key.id },
      { name: CONSOLE_CLIENT_NAME, type: 'public', redirectUris: [callback], scopes: ['admin'], agent: null },
    );
    return { ...created, consoleClientId: row.clientId };
  });

/** The id of tenant `default`'s console client for this callback, if it still has one (the admin may delete it). */
export async function findConsoleClientId(db: Db, callback: string): Promise<string | null> {
  const found = await db.oAuthClient.findFirst({
    where: { tenant: { name: 'default' }, name: CONSOLE_CLIENT_NAME, type: 'public', redirectUris: { has: callback } },
    orderBy: { createdAt: 'asc' },
    select: { clientId: true },
  });
  return found?.clientId ?? null;
}

export const listOAuthClients = (db: Db, tenantId: string): Promise<OAuthClientRow[]> =>
  db.oAuthClient.findMany({ where: { tenantId }, orderBy: [{ createdAt: 'asc' }, { clientId: 'asc' }] });

/** The client by its id, whatever its tenant (or none yet): what the authorization server's protocol routes look clients up by. */
export function findOAuthClient(db: Db, clientId: string): Promise<OAuthClientRow | null> {
  if (!CLIENT_ID_PATTERN.test(clientId)) return Promise.resolve(null);
  return db.oAuthClient.findUnique({ where: { clientId } });
}

/** Deletes a client of the tenant and, by the foreign key, every token, code and grant of it; false when there is none. */
export async function deleteOAuthClient(db: Db, tenantId: string, clientId: string): Promise<boolean> {
  if (!CLIENT_ID_PATTERN.test(clientId)) return false;
  const { count } = await transaction(db, (tx) => tx.oAuthClient.deleteMany({ where: { clientId, tenantId } }));
  return count === 1;
}
