import { RefreshingCache } from '../refreshing-cache.ts';
import type { Db } from '../store/db.ts';
import { findKey, touchKey, type KeyPrincipal } from '../store/keys.ts';
import { hashSecret, looksLikeSecret, PREFIX_LENGTH, secretPrefix } from './secrets.ts';

/**
 * What a presented secret is looked up by: its prefix and the base64 of its SHA-256 digest. It is
 * computed once per request; checking the same request again (after its body arrived) reuses it.
 */
export type Credential = string & { readonly __credential: never };

export interface KeyVerifierOptions {
  /** How long a key found is used after its lookup began. */
  maxAgeMs?: number;
  /** How often a key's last use is written, at most. */
  touchEveryMs?: number;
}

/**
 * Resolves bearer secrets to principals. A verified key is used for at most `maxAgeMs` after its
 * lookup began, so a key revoked on another node stops working well within a second; one revoked
 * here stops at once. Keys are remembered by prefix and digest, never by the secret itself.
 */
export class KeyVerifier {
  private readonly cache: RefreshingCache<Credential, KeyPrincipal>;
  private readonly touchedAt = new Map<string, number>();
  private readonly touchEveryMs: number;

  constructor(
    private readonly db: Db,
    { maxAgeMs = 500, touchEveryMs = 60_000 }: KeyVerifierOptions = {},
  ) {
    this.touchEveryMs = touchEveryMs;
    this.cache = new RefreshingCache((credential) => this.lookUp(credential), maxAgeMs);
  }

  /** The credential a bearer secret is looked up by; null when the secret cannot be one of our keys. */
  credentialOf(secret: string): Credential | null {
    if (!looksLikeSecret(secret)) return null;
    return `${secretPrefix(secret)}${hashSecret(secret).toString('base64')}` as Credential;
  }

  /** The live key the credential names: from this node's memory while fresh, else one query. */
  verify(credential: Credential): Promise<KeyPrincipal | null> {
    return this.cache.get(credential);
  }

  /** Forgets every remembered key: called after a revocation on this node. */
  forgetAll(): void {
    this.cache.clear();
  }

  private async lookUp(credential: Credential): Promise<KeyPrincipal | null> {
    const prefix = credential.slice(0, PREFIX_LENGTH);
    const principal = await findKey(this.db, prefix, Buffer.from(credential.slice(PREFIX_LENGTH), 'base64'));
    if (principal) this.touch(principal.keyId, Date.now());
    return principal;
  }

  /** Records last use, at most once per `touchEveryMs` per key, off the request path. */
  private touch(keyId: string, now: number): void {
    if (now - (this.touchedAt.get(keyId) ?? 0) < this.touchEveryMs) return;
    this.touchedAt.set(keyId, now);
    touchKey(this.db, keyId, new Date(now)).catch(() => this.touchedAt.delete(keyId));
  }
}
