import { RefreshingCache } from '../refreshing-cache.ts';
import type { Db } from '../store/db.ts';
import { findKey, touchKey, type KeyPrincipal } from '../store/keys.ts';
import { hashSecret, looksLikeSecret, secretPrefix } from './secrets.ts';

/**
 * Resolves bearer secrets to principals. A verified key is used for at most `maxAgeMs` after its
 * lookup began, so a key revoked on another node stops working well within a second; one revoked
 * here stops at once. Keys are remembered by prefix and digest, never by the secret itself.
 */
export class KeyVerifier {
  private readonly cache: RefreshingCache<string, KeyPrincipal>;
  private readonly touchedAt = new Map<string, number>();

  constructor(
    private readonly db: Db,
    maxAgeMs = 500,
    private readonly touchEveryMs = 60_000,
  ) {
    this.cache = new RefreshingCache(async (lookupKey) => {
      const separator = lookupKey.indexOf(' ');
      const principal = await findKey(db, lookupKey.slice(0, separator), Buffer.from(lookupKey.slice(separator + 1), 'base64'));
      if (principal) this.touch(principal.keyId, Date.now());
      return principal;
    }, maxAgeMs);
  }

  async verify(secret: string): Promise<KeyPrincipal | null> {
    if (!looksLikeSecret(secret)) return null;
    return this.cache.get(`${secretPrefix(secret)} ${hashSecret(secret).toString('base64')}`);
  }

  /** Forgets every remembered key: called after a revocation on this node. */
  forgetAll(): void {
    this.cache.clear();
  }

  /** Records last use, at most once per `touchEveryMs` per key, off the request path. */
  private touch(keyId: string, now: number): void {
    if (now - (this.touchedAt.get(keyId) ?? 0) < this.touchEveryMs) return;
    this.touchedAt.set(keyId, now);
    touchKey(this.db, keyId, new Date(now)).catch(() => this.touchedAt.delete(keyId));
  }
}
