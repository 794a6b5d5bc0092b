import { hash, randomBytes } from 'node:crypto';
import { PENDING_CONSENTS_PER_CLIENT } from '../../contract/index.ts';
import type { Db } from './db.ts';
import { signingKeyIsLive } from './keys.ts';
import type { Prisma } from './prisma/client.ts';

/** What the library hands its adapter: a plain JSON object, which it keeps mutating afterwards. */
export type Payload = Record<string, unknown>;

/**
 * Kinds whose id is the bearer secret itself (the token or code a client presents): only its
 * SHA-256 is stored, as the row's id, and the payload keeps no copy of it. They are always looked
 * up by that value (find), never listed, so nothing needs it back.
 */
const SECRET_KINDS = new Set(['AccessToken', 'ClientCredentials', 'RefreshToken', 'AuthorizationCode']);
/** Kinds that let a caller in: ending one must reach every cache that holds it as verified. */
export const BEARER_KINDS = new Set(['AccessToken', 'ClientCredentials']);

export const digestOf = (id: string): string => hash('sha256', id, 'base64url');

/** A client has as many consents pending as it may; the next is possible once the oldest expires. */
export class TooManyPendingConsents extends Error {
  /** `freeInMs`: until the oldest pending consent expires. */
  constructor(readonly freeInMs: number) {
    super(`the client has ${PENDING_CONSENTS_PER_CLIENT} consents pending`);
    this.name = 'TooManyPendingConsents';
  }
}

/** A code or refresh token was used already, by a request before this one or beside it. */
export class AlreadyConsumed extends Error {
  constructor(kind: string) {
    super(`${kind} already consumed`);
    this.name = 'AlreadyConsumed';
  }
}

/** A record's client's tenant, read with it: a record signed in for by a key is checked against that tenant. */
const WITH_TENANT = { client: { select: { tenantId: true } } } as const;
type StoredRecord = Prisma.OAuthRecordGetPayload<{ include: typeof WITH_TENANT }>;

/** How often expired rows are deleted at most, in the background of a write. */
const SWEEP_EVERY_MS = 60_000;

export interface RecordHooks {
  /** Tokens that let callers in have ended (destroyed, or their grant revoked): caches must forget them. */
  bearerEnded: () => Promise<void>;
  /** A background sweep failed; the next write tries again. */
  sweepFailed: (error: unknown) => void;
}

/**
 * The storage of the OAuth library (oidc-provider's Adapter interface) over one table, one
 * instance per model kind. Payloads are stored as copies; the columns beside them serve the
 * library's lookups (uid, grant id), deletions by client and by signing-in key, and the sweep.
 */
export class OAuthRecords {
  private static lastSweep = 0;

  constructor(
    private readonly db: Db,
    private readonly kind: string,
    private readonly hooks: RecordHooks,
  ) {}

  private rowId(id: string): string {
    return SECRET_KINDS.has(this.kind) ? digestOf(id) : id;
  }

  async upsert(id: string, payload: Payload, expiresIn: number | undefined): Promise<void> {
    const stored = JSON.parse(JSON.stringify(payload)) as Payload;
    if (SECRET_KINDS.has(this.kind)) delete stored.jti;
    const columns = {
      payload: stored as Prisma.InputJsonObject,
      grantId: text(payload.grantId),
      uid: text(payload.uid),
      // An interaction names its client among the authorization request's parameters.
      clientId: text(payload.clientId) ?? text((payload.params as Payload | undefined)?.client_id),
      accountId: text(payload.accountId),
      // The library's `aud`: the resource (RFC 8707) an access token was issued for, if any.
      audience: BEARER_KINDS.has(this.kind) ? text(payload.aud) : null,
      expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
    };
    const key = { kind: this.kind, id: this.rowId(id) };
    const write = (db: Prisma.TransactionClient) =>
      db.oAuthRecord.upsert({ where: { kind_id: key }, create: { ...key, ...columns }, update: columns });
    const { clientId } = columns;
    if (this.kind === 'Interaction' && clientId !== null) {
      await this.db.$transaction(async (tx) => {
        await roomForConsent(tx, clientId, key.id);
        await write(tx);
      });
    } else {
      await write(this.db);
    }
    this.sweepNow();
  }

  async find(id: string): Promise<Payload | undefined> {
    const row = await this.db.oAuthRecord.findUnique({ where: { kind_id: { kind: this.kind, id: this.rowId(id) } }, include: WITH_TENANT });
    return row ? this.present(row, id) : undefined;
  }

  async findByUid(uid: string): Promise<Payload | undefined> {
    const row = await this.db.oAuthRecord.findFirst({ where: { kind: this.kind, uid }, include: WITH_TENANT });
    return row ? this.present(row, row.id) : undefined;
  }

  /** Device codes are not served (no device flow). */
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  /**
   * Marks a code or refresh token used, once: of any number of simultaneous calls, exactly one
   * finds it unused and marks it; every other, and any call once it is gone, throws AlreadyConsumed.
   */
  async consume(id: string): Promise<void> {
    const consumed = Math.floor(Date.now() / 1000);
    const marked = await this.db.$executeRaw`
      UPDATE "oauth_records" SET "consumed_at" = now(), "payload" = "payload" || jsonb_build_object('consumed', ${consumed}::int)
      WHERE "kind" = ${this.kind} AND "id" = ${this.rowId(id)} AND "consumed_at" IS NULL`;
    if (marked === 0) throw new AlreadyConsumed(this.kind);
  }

  async destroy(id: string): Promise<void> {
    await this.db.oAuthRecord.deleteMany({ where: { kind: this.kind, id: this.rowId(id) } });
    if (BEARER_KINDS.has(this.kind)) await this.hooks.bearerEnded();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db.oAuthRecord.deleteMany({ where: { kind: this.kind, grantId } });
    if (BEARER_KINDS.has(this.kind)) await this.hooks.bearerEnded();
  }

  private async present(row: StoredRecord, id: string): Promise<Payload | undefined> {
    if (row.expiresAt && row.expiresAt.getTime() <= Date.now()) return undefined;
    if (row.accountId !== null && !(await this.signedInKeyIsLive(row, row.accountId))) return undefined;
    const payload = row.payload as Payload;
    return SECRET_KINDS.has(this.kind) ? { ...payload, jti: id } : payload;
  }

  /** Whether the key that signed in for a record is live, and of its client's tenant: a client of no tenant yet (it registered itself) has no such record. */
  private async signedInKeyIsLive(row: StoredRecord, accountId: string): Promise<boolean> {
    if (!row.client) return signingKeyIsLive(this.db, accountId, undefined);
    return row.client.tenantId !== null && signingKeyIsLive(this.db, accountId, row.client.tenantId);
  }

  /** Deletes expired rows, at most once a minute per process, without making the write wait. */
  private sweepNow(): void {
    const now = Date.now();
    if (now - OAuthRecords.lastSweep < SWEEP_EVERY_MS) return;
    OAuthRecords.lastSweep = now;
    void sweepExpired(this.db).catch(this.hooks.sweepFailed);
  }
}

/**
 * Throws TooManyPendingConsents when the client has PENDING_CONSENTS_PER_CLIENT interactions
 * pending besides this one, and this one is new. The client's row stays locked until the
 * interaction is written, so simultaneous requests count one after the other and cannot pass the
 * cap together; FOR NO KEY UPDATE does not hold up the client's tokens, which only reference it.
 */
async function roomForConsent(tx: Prisma.TransactionClient, clientId: string, id: string): Promise<void> {
  await tx.$queryRaw`SELECT 1 FROM "oauth_clients" WHERE "client_id" = ${clientId} FOR NO KEY UPDATE`;
  const now = new Date();
  const [pending] = await tx.$queryRaw<{ others: number; known: boolean | null; oldest: Date | null }[]>`
    SELECT count(*) FILTER (WHERE "id" <> ${id})::int AS "others", bool_or("id" = ${id}) AS "known", min("expires_at") AS "oldest"
    FROM "oauth_records" WHERE "kind" = 'Interaction' AND "client_id" = ${clientId} AND "expires_at" > ${now}`;
  if (pending!.known || pending!.others < PENDING_CONSENTS_PER_CLIENT) return;
  throw new TooManyPendingConsents(pending!.oldest!.getTime() - now.getTime());
}

/** Deletes every expired row; returns how many. */
export async function sweepExpired(db: Db): Promise<number> {
  const { count } = await db.oAuthRecord.deleteMany({ where: { expiresAt: { lte: new Date() } } });
  return count;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * The keys that sign the library's cookies: made by the first node that needs them and read by
 * every other, so that a sign-in begun on one node can finish on another.
 */
export async function cookieKeys(db: Db): Promise<string[]> {
  const key = { kind: 'CookieKeys', id: 'grantd' };
  const fresh = { keys: [randomBytes(32).toString('base64url')] };
  await db.oAuthRecord.createMany({ data: [{ ...key, payload: fresh }], skipDuplicates: true });
  const row = await db.oAuthRecord.findUniqueOrThrow({ where: { kind_id: key } });
  return (row.payload as { keys: string[] }).keys;
}
