import type { Db } from '../store/db.ts';
import { touchKey, verifySecret, type KeyPrincipal } from '../store/keys.ts';
import { hashSecret, looksLikeSecret } from './secrets.ts';

/**
 * Resolves bearer secrets to principals. A verified key is remembered for at most `maxAgeMs`, so a
 * key revoked on another node stops working well within a second; one revoked here stops at once.
 * Concurrent requests with the same secret share one lookup; unknown secrets are not remembered.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, { principal: Promise<KeyPrincipal | null>; until: number }>();
  private readonly touchedAt = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly maxAgeMs = 500,
    private readonly touchEveryMs = 60_000,
  ) {}

  async verify(secret: string): Promise<KeyPrincipal | null> {
    if (!looksLikeSecret(secret)) return null;
    const digest = hashSecret(secret).toString('base64');
    const cached = this.cache.get(digest);
    if (cached && cached.until > Date.now()) return cached.principal;
    const lookup = { principal: verifySecret(this.db, secret), until: Number.POSITIVE_INFINITY };
    this.cache.set(digest, lookup);
    // Only this caller settles the entry, and only if no revocation forgot it meanwhile.
    const settle = (principal: KeyPrincipal | null) => {
      if (this.cache.get(digest) !== lookup) return;
      if (principal === null) this.cache.delete(digest);
      else lookup.until = Date.now() + this.maxAgeMs;
    };
    try {
      const principal = await lookup.principal;
      settle(principal);
      if (principal) this.touch(principal.keyId, Date.now());
      return principal;
    } catch (error) {
      settle(null);
      throw error;
    }
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
