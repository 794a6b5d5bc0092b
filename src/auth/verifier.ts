import { LRUCache } from 'lru-cache';
import { FRESHNESS_MS } from '../config.ts';
import { RefreshingCache } from '../cache/refreshing-cache.ts';
import type pg from 'pg';
import type { TenantWatch } from '../store/change-watch.ts';
import type { Db } from '../store/db.ts';
import { findKey, touchKeys, type KeyLookup, type KeyUse } from '../store/keys.ts';
import { accessTokenDigest, findAccessToken } from '../store/oauth-tokens.ts';
import { ACCESS_TOKEN_PREFIX, looksLikeAccessToken } from './oauth/token-format.ts';
import type { Principal } from './principal.ts';
import { hashSecretBase64, looksLikeSecret, PREFIX_LENGTH, secretPrefix } from './secrets.ts';

/**
 * What a presented secret is looked up by: its prefix and the base64 of its SHA-256 digest (an
 * OAuth access token: `svc_at_` and the base64url digest it is stored under). It is
 * computed once per request; checking the same request again (after its body arrived) reuses it.
 */
export type Credential = string & { readonly __credential: never };

export interface KeyVerifierOptions {
  /** How long a lookup's answer, found or absent, is used after the lookup began. */
  maxAgeMs?: number;
  /** How often a key's last use is written, at most. */
  touchEveryMs?: number;
  /** Prefixes remembered as absent, at most (least recently used go first). */
  absentPrefixes?: number;
  /** Tenants whose last forgetting is remembered, at most; past that, forgetting one may make others' keys be looked up again. */
  forgottenTenants?: number;
  /** Credentials remembered as verified lately (LATELY_MS), at most (least recently used go first). */
  lately?: number;
  /** Vouches that an API key's tenant has not changed since its lookup: the key is then used past `maxAgeMs` (never a token, which the feed does not log). */
  watch?: TenantWatch;
}

/**
 * How long a credential found live is remembered as in use (isKnown): its lookups are then not
 * counted as possible failures before their answer. A backend that serves many tenants checks with
 * many keys from one address, most of them less often than `maxAgeMs`, so each use is a lookup;
 * counted ahead, 20 of them under way at once were 20 failures, and the address was refused.
 */
const LATELY_MS = 10 * 60_000;

/** What verifying a credential asks of the database. */
export interface CredentialLookups {
  /** The live key with this prefix and digest, and whether any live key has the prefix. */
  findKey(prefix: string, digest: Uint8Array): Promise<KeyLookup>;
  /** Records keys' last uses, in one statement. */
  touchKeys(uses: readonly KeyUse[]): Promise<void>;
  /** The live access token stored under this digest. */
  findAccessToken(digest: string): Promise<Principal | null>;
}

/** The lookups in the database: keys on the pool under Prisma (src/store/keys.ts says why), tokens through Prisma. */
export const databaseLookups = (db: Db, pool: pg.Pool): CredentialLookups => ({
  findKey: (prefix, digest) => findKey(pool, prefix, digest),
  touchKeys: (uses) => touchKeys(pool, uses),
  findAccessToken: (digest) => findAccessToken(db, digest),
});

/** A principal found by the lookup numbered `lookup`. */
interface Verified {
  principal: Principal;
  lookup: number;
}

/**
 * Resolves bearer secrets, API keys and OAuth access tokens alike, to principals. A verified key is used for at most `maxAgeMs` after its
 * lookup began, so a key revoked on another node stops working well within a second; one revoked
 * here stops at once. Keys are remembered by prefix and digest, never by the secret itself.
 *
 * A prefix that no live key had is remembered as absent for `maxAgeMs` too, so a bad key sent again
 * and again (or many with one prefix) costs one query, not one each. That is safe for new keys: a
 * key's prefix is 8 random base62 characters, so one is refused for that short while only if
 * someone had just presented its prefix: with the whole memory full, one chance in 20 billion.
 *
 * A tenant's keys are forgotten without touching another tenant's (`forgetTenant`): each lookup is
 * numbered as it begins, and a key found by a lookup numbered before its tenant was last forgotten
 * is looked up again. Forgetting costs nothing per key held, however many tenants share the node.
 */
export class KeyVerifier {
  private readonly cache: RefreshingCache<Credential, Verified>;
  private readonly absent: LRUCache<string, true>;
  private readonly touchedAt = new Map<string, number>();
  /** Last uses found while a touch statement was under way: the next one writes them together. */
  private untouched: KeyUse[] = [];
  private touching = false;
  private readonly touchEveryMs: number;
  /** Lookups begun so far, and forgettings: one clock. */
  private clock = 0;
  /** For each tenant forgotten lately, the clock when it was; a tenant pushed out leaves its clock as the floor of all. */
  private readonly forgottenAt: LRUCache<string, number>;
  private forgottenFloor = 0;
  /** Credentials a lookup found live within LATELY_MS, and not found since, with when they expire: never used to admit, only to count (isKnown). */
  private readonly lately: LRUCache<Credential, number>;

  constructor(
    readonly lookups: CredentialLookups,
    {
      maxAgeMs = FRESHNESS_MS,
      touchEveryMs = 60_000,
      absentPrefixes = 10_000,
      forgottenTenants = 10_000,
      lately = 100_000,
      watch,
    }: KeyVerifierOptions = {},
  ) {
    this.lately = new LRUCache({ max: lately, ttl: LATELY_MS, ttlResolution: 0, perf: { now: () => Date.now() } });
    this.touchEveryMs = touchEveryMs;
    // Date's clock, like the cache of live keys (and the tests' fake one).
    this.absent = new LRUCache({ max: absentPrefixes, ttl: maxAgeMs, ttlResolution: 0, perf: { now: () => Date.now() } });
    // An access token is not used past its expiry, even while its lookup is fresh.
    this.cache = new RefreshingCache(
      (credential) => this.lookUp(credential),
      maxAgeMs,
      undefined,
      ({ principal }) => (principal.kind === 'api_key' ? undefined : principal.expiresAt),
      (_credential, { principal }, loadedAt) => principal.kind === 'api_key' && watch?.covers(principal.tenantId, loadedAt) === true,
    );
    this.forgottenAt = new LRUCache({
      max: forgottenTenants,
      dispose: (at, _tenant, reason) => {
        if (reason === 'evict') this.forgottenFloor = Math.max(this.forgottenFloor, at);
      },
    });
  }

  /** The credential a bearer secret is looked up by; null when the secret cannot be one of our keys. */
  credentialOf(secret: string): Credential | null {
    if (looksLikeAccessToken(secret)) return `${ACCESS_TOKEN_PREFIX}${accessTokenDigest(secret)}` as Credential;
    if (!looksLikeSecret(secret)) return null;
    return `${secretPrefix(secret)}${hashSecretBase64(secret)}` as Credential;
  }

  /** The live key the credential names: from this node's memory while fresh, else one query. */
  async verify(credential: Credential): Promise<Principal | null> {
    const found = await this.cache.get(credential);
    if (found === null || this.current(found)) return found?.principal ?? null;
    // Found before its tenant was forgotten: a lookup that begins now.
    return (await this.cache.get(credential, { maxAgeMs: 0 }))?.principal ?? null;
  }

  /** The live key the credential names when this node holds it verified and fresh: at once, with no promise to wait for. */
  verifiedNow(credential: Credential): Principal | undefined {
    const found = this.cache.loadedNow(credential);
    return found && this.current(found) ? found.principal : undefined;
  }

  /**
   * True while this node holds the credential's key as verified, or is looking it up, or found it
   * live lately (LATELY_MS): a lookup of it is most likely no failure, and is counted only if it
   * turns out one.
   */
  isKnown(credential: Credential): boolean {
    if ((this.lately.get(credential) ?? 0) > Date.now()) return true;
    if (!this.cache.has(credential)) return false;
    const found = this.cache.loadedNow(credential);
    return found === undefined || this.current(found);
  }

  /** Forgets every remembered key and token of the tenant: after a revocation there, or to read it at a newer state. */
  forgetTenant(tenantId: string): void {
    this.forgottenAt.set(tenantId, ++this.clock);
  }

  /** Forgets every remembered key and token, of every tenant. */
  forgetAll(): void {
    this.cache.clear();
  }

  /** Whether the lookup that found it began after its tenant was last forgotten. */
  private current({ principal, lookup }: Verified): boolean {
    return lookup >= (this.forgottenAt.get(principal.tenantId) ?? this.forgottenFloor);
  }

  private async lookUp(credential: Credential): Promise<Verified | null> {
    const lookup = ++this.clock;
    const principal = await this.find(credential);
    if (principal) this.lately.set(credential, principal.kind === 'api_key' ? Infinity : principal.expiresAt);
    else this.lately.delete(credential);
    return principal && { principal, lookup };
  }

  private async find(credential: Credential): Promise<Principal | null> {
    if (credential.startsWith(ACCESS_TOKEN_PREFIX)) return this.lookups.findAccessToken(credential.slice(ACCESS_TOKEN_PREFIX.length));
    const prefix = credential.slice(0, PREFIX_LENGTH);
    if (this.absent.has(prefix)) return null;
    const startedAt = Date.now();
    const found = await this.lookups.findKey(prefix, Buffer.from(credential.slice(PREFIX_LENGTH), 'base64'));
    if (found.principal) this.touch(found.principal, Date.now());
    else if (!found.prefixInUse) this.absent.set(prefix, true, { start: startedAt });
    return found.principal;
  }

  /**
   * Records last use, at most once per `touchEveryMs` per key, off the request path, one statement
   * under way at a time: the uses found meanwhile wait for it and go together in the next. A node
   * that starts with thousands of tenants' keys to look up writes them in a few commits rather than
   * one each, which held the connections of the lookups behind them (docs/decisions.md#key-uses-are-written-together).
   */
  private touch({ tenantId, keyId }: Principal, now: number): void {
    if (now - (this.touchedAt.get(keyId) ?? 0) < this.touchEveryMs) return;
    this.touchedAt.set(keyId, now);
    this.untouched.push({ tenantId, keyId, at: new Date(now) });
    if (!this.touching) void this.writeUses();
  }

  /** Writes the uses waiting, then those found meanwhile, until none wait; a failed write's keys are written again at their next lookup. */
  private async writeUses(): Promise<void> {
    this.touching = true;
    while (this.untouched.length > 0) {
      const uses = this.untouched;
      this.untouched = [];
      await this.lookups.touchKeys(uses).catch(() => {
        for (const { keyId } of uses) this.touchedAt.delete(keyId);
      });
    }
    this.touching = false;
  }
}
