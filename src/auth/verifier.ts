import type { Db } from '../store/db.ts';
import { touchKey, verifySecret, type KeyPrincipal } from '../store/keys.ts';
import { hashSecret, looksLikeSecret } from './secrets.ts';

/**
 * Resolves bearer secrets to principals. A verified key is remembered for at most `maxAgeMs`, so a
 * key revoked on another node stops working well within a second; one revoked here stops at once.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, { principal: KeyPrincipal; until: number }>();
  private readonly touchedAt = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly maxAgeMs = 500,
    private readonly touchEveryMs = 60_000,
  ) {}

  async verify(secret: string): Promise<KeyPrincipal | null> {
    if (!looksLikeSecret(secret)) return null;
    const digest = hashSecret(secret).toString('base64');
    const now = Date.now();
    const cached = this.cache.get(digest);
    if (cached && cached.until > now) return cached.principal;
    const principal = await verifySecret(this.db, secret);
    if (principal === null) {
      this.cache.delete(digest);
      return null;
    }
    this.cache.set(digest, { principal, until: now + this.maxAgeMs });
    this.touch(principal.keyId, now);
    return principal;
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
