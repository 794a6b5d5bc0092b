import { digestsEqual, hashSecret, KEY_ID_PATTERN, newKeyId, newSecret, secretPrefix } from '../auth/secrets.ts';
import type { KeyScope } from '../../contract/index.ts';
import type { ApiKeyPrincipal } from '../auth/principal.ts';
import { authorityOf, type Authority } from './authority.ts';
import type pg from 'pg';
import type { Db } from './db.ts';
import type { Prisma } from './prisma/client.ts';
import { transaction } from './transaction.ts';

export interface CreatedKey {
  id: string;
  prefix: string;
  secret: string;
  label: string;
  scopes: KeyScope[];
  createdAt: Date;
}

type Tx = Prisma.TransactionClient | Db;

/** `madeByAgents`: the agents on whose authority the key is made (see createKeyOnAuthority); their killswitches revoke it. */
export async function createKey(db: Tx, tenantId: string, label: string, scopes: KeyScope[], madeByAgents: string[] = []): Promise<CreatedKey> {
  const secret = newSecret();
  const row = await db.apiKey.create({
    data: {
      id: newKeyId(),
      tenantId,
      prefix: secretPrefix(secret),
      secretHash: new Uint8Array(hashSecret(secret)),
      label,
      scopes: [...new Set(scopes)],
      madeByAgents,
    },
  });
  return { id: row.id, prefix: row.prefix, secret, label: row.label, scopes: row.scopes as KeyScope[], createdAt: row.createdAt };
}

/**
 * A key made by a request's principal: it records the agents behind that principal (authorityOf),
 * whose killswitches revoke it, and is refused (401) when that authority ended meanwhile.
 */
export function createKeyOnAuthority(db: Db, authority: Authority, label: string, scopes: KeyScope[]): Promise<CreatedKey> {
  return transaction(db, async (tx) => createKey(tx, authority.tenantId, label, scopes, await authorityOf(tx, authority)));
}

export function listKeys(db: Db, tenantId: string) {
  return db.apiKey.findMany({
    where: { tenantId, revokedAt: null },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    select: { id: true, prefix: true, label: true, scopes: true, createdAt: true, lastUsedAt: true },
  });
}

/**
 * Revokes a live key of the tenant, and with it the OAuth grants it signed in for (their codes and
 * tokens, refresh tokens included), in one transaction; false when there is no live key by that id.
 */
export async function revokeKey(db: Db, tenantId: string, keyId: string): Promise<boolean> {
  // Not asked of the database: an id no key can have may hold what PostgreSQL refuses (U+0000).
  if (!KEY_ID_PATTERN.test(keyId)) return false;
  return transaction(db, async (tx) => (await revokeKeys(tx, { id: keyId, tenantId })).length === 1);
}

/**
 * Revokes the tenant's live keys that `where` selects, and deletes the OAuth records they signed in
 * for, in the caller's transaction: a revocation, whether of one key or by an agent's killswitch. The
 * ids revoked.
 */
export async function revokeKeys(tx: Prisma.TransactionClient, where: Prisma.ApiKeyWhereInput & { tenantId: string }): Promise<string[]> {
  const revoked = await tx.apiKey.updateManyAndReturn({
    where: { ...where, revokedAt: null },
    data: { revokedAt: new Date() },
    select: { id: true },
  });
  const ids = revoked.map((key) => key.id);
  if (ids.length > 0) await tx.oAuthRecord.deleteMany({ where: { accountId: { in: ids } } });
  return ids;
}

/**
 * Whether an OAuth record signed in for by `keyId` still holds: only while that key is live (in the
 * client's tenant, when the record has a client). Revocation deletes the key's records, but a
 * consent or a refresh that read the key before the revocation may write one after it: such a
 * record is then never honoured.
 */
export async function signingKeyIsLive(db: Db, keyId: string, tenantId: string | undefined): Promise<boolean> {
  return (await db.apiKey.count({ where: { id: keyId, revokedAt: null, ...(tenantId === undefined ? {} : { tenantId }) } })) === 1;
}

/** A lookup's answer: the live key with the secret, if any, and whether any live key has its prefix. */
export interface KeyLookup {
  principal: ApiKeyPrincipal | null;
  prefixInUse: boolean;
}

/**
 * The live keys with prefix $1, with their tenant's cursor secret. A named statement on the pool
 * under Prisma rather than Prisma's query: every first request of a key in a while makes it, and
 * Prisma's took about ten times the CPU (docs/decisions.md#the-lookups-of-every-cold-request-skip-prisma).
 */
const FIND_KEY_SQL = `SELECT k.id, k.tenant_id::text, k.scopes, k.secret_hash, t.cursor_secret
FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
WHERE k.prefix = $1 AND k.revoked_at IS NULL`;

/**
 * Finds the live key whose secret has this prefix and SHA-256 digest. Rows are found by the
 * non-secret prefix and the digests compared in constant time, so timing says nothing about the secret.
 */
export async function findKey(pool: pg.Pool, prefix: string, digest: Uint8Array): Promise<KeyLookup> {
  const { rows } = await pool.query<[string, string, string[], Buffer, Buffer]>({
    name: 'grantd_find_key',
    text: FIND_KEY_SQL,
    values: [prefix],
    rowMode: 'array',
  });
  let principal: ApiKeyPrincipal | null = null;
  for (const [keyId, tenantId, scopes, secretHash, cursorSecret] of rows) {
    if (digestsEqual(secretHash, digest)) principal = { kind: 'api_key', keyId, tenantId, scopes, cursorSecret };
  }
  return { principal, prefixInUse: rows.length > 0 };
}

/** A key's last use, as KeyVerifier records it. */
export interface KeyUse {
  tenantId: string;
  keyId: string;
  at: Date;
}

/**
 * Records the keys' last uses in one statement, one commit (each key's own row: its tenant is in the
 * join as in every query).
 */
export async function touchKeys(pool: pg.Pool, uses: readonly KeyUse[]): Promise<void> {
  await pool.query({
    name: 'grantd_touch_keys',
    text: `UPDATE api_keys k SET last_used_at = u.at
FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) AS u(tenant_id, id, at)
WHERE k.tenant_id = u.tenant_id AND k.id = u.id`,
    values: [uses.map((u) => u.tenantId), uses.map((u) => u.keyId), uses.map((u) => u.at)],
  });
}
