import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PublicOAuthClient, TokenSet } from '../../src/client/index.ts';
import { Session } from '../../src/console/session.ts';

/** The console's session without a browser: its page address is all it reads of `window`. */
beforeEach(() => {
  vi.useFakeTimers();
  vi.stubGlobal('window', { location: { href: 'http://grantd.test/console/' } });
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

const tokens = (n: number) =>
  ({ access_token: `access-${n}`, refresh_token: `refresh-${n}`, token_type: 'Bearer', expires_in: 120, scope: 'admin' }) as unknown as TokenSet;

describe('the console session (docs/console.md)', () => {
  it('waits for a renewal under way when the user signs out, and revokes its refresh token: nothing is handed the renewed tokens, nothing renews again', async () => {
    let renewed!: (value: TokenSet) => void;
    const refresh = vi.fn(() => new Promise<TokenSet>((resolve) => (renewed = resolve)));
    const revoke = vi.fn(() => Promise.resolve());
    const oauth: PublicOAuthClient = { exchangeCode: vi.fn(), refresh, revoke };
    const ended: string[] = [];
    const session = new Session(oauth, tokens(1), (reason) => ended.push(reason));
    const handed: (string | null)[] = [];
    session.watch((api) => handed.push(api === null ? null : 'client'));

    // The renewal starts a minute before expiry; the user signs out while it is under way.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(refresh).toHaveBeenCalledWith('refresh-1');
    const signedOut = session.signOut();
    await vi.advanceTimersByTimeAsync(0);
    // Nothing is revoked while the renewal spends its refresh token (the renewal would be refused).
    expect(revoke).not.toHaveBeenCalled();
    renewed(tokens(2));
    await signedOut;
    await vi.advanceTimersByTimeAsync(10 * 60_000);

    // The revocation names the renewed refresh token, the grant's newest; the renewed tokens reach no page
    // (the changes tail would have polled with them, refused) and no renewal follows.
    expect(revoke).toHaveBeenCalledTimes(1);
    expect(revoke).toHaveBeenCalledWith('refresh-2', 'refresh_token');
    expect(handed).toEqual([null, null]);
    expect(refresh).toHaveBeenCalledTimes(1);
    expect(ended).toEqual(['You are signed out.']);
  });

  it('signs out, without saying the session could not be renewed, when a renewal under way at sign-out is refused', async () => {
    let refused!: (error: Error) => void;
    const revoke = vi.fn(() => Promise.resolve());
    const oauth: PublicOAuthClient = {
      exchangeCode: vi.fn(),
      refresh: vi.fn(() => new Promise<TokenSet>((_, reject) => (refused = reject))),
      revoke,
    };
    const ended: string[] = [];
    const session = new Session(oauth, tokens(1), (reason) => ended.push(reason));
    await vi.advanceTimersByTimeAsync(60_000);
    const signedOut = session.signOut();
    refused(new Error('invalid_grant'));
    await signedOut;
    expect(revoke).toHaveBeenCalledWith('refresh-1', 'refresh_token');
    expect(ended).toEqual(['You are signed out.']);
  });

  it('ends the session, once, when a renewal is refused', async () => {
    const oauth: PublicOAuthClient = {
      exchangeCode: vi.fn(),
      refresh: vi.fn(() => Promise.reject(new Error('invalid_grant'))),
      revoke: vi.fn(() => Promise.resolve()),
    };
    const ended: string[] = [];
    const session = new Session(oauth, tokens(1), (reason) => ended.push(reason));
    const handed: (string | null)[] = [];
    session.watch((api) => handed.push(api === null ? null : 'client'));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(handed).toEqual([null]);
    expect(ended).toEqual([expect.stringContaining('could not be renewed')]);
  });
});
