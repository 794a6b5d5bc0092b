import { describe, expect, it } from 'vitest';
import { createPublicOAuthClient, NetworkError, ProblemError } from '../../src/client/index.ts';

/** A fetch that records each request and answers as `answer` says. */
function recordingFetch(answer: () => Response | Promise<Response>) {
  const sent: { url: string; headers: Headers; body: URLSearchParams }[] = [];
  const fetch = async (url: string, init: RequestInit) => {
    sent.push({ url, headers: new Headers(init.headers), body: new URLSearchParams(init.body as string) });
    return answer();
  };
  return { sent, fetch };
}

const json = (status: number, body: object) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const TOKENS = { access_token: 'svc_at_x', token_type: 'Bearer', expires_in: 3600, scope: 'admin', refresh_token: 'svc_rt_y' };

describe('createPublicOAuthClient', () => {
  it('names itself by client_id in the form and sends no Authorization header', async () => {
    const { sent, fetch } = recordingFetch(() => json(200, TOKENS));
    const oauth = createPublicOAuthClient({ clientId: 'oc_console', baseUrl: 'http://grantd.test/', fetch });
    expect(await oauth.exchangeCode({ code: 'c1', redirectUri: 'http://grantd.test/console/callback', codeVerifier: 'v1' })).toEqual(TOKENS);
    await oauth.refresh('svc_rt_y');
    expect(sent.map((s) => s.url)).toEqual(['http://grantd.test/v1/oauth/token', 'http://grantd.test/v1/oauth/token']);
    expect(sent.every((s) => !s.headers.has('authorization'))).toBe(true);
    expect(Object.fromEntries(sent[0]!.body)).toEqual({
      grant_type: 'authorization_code',
      code: 'c1',
      redirect_uri: 'http://grantd.test/console/callback',
      code_verifier: 'v1',
      client_id: 'oc_console',
    });
    expect(Object.fromEntries(sent[1]!.body)).toEqual({ grant_type: 'refresh_token', refresh_token: 'svc_rt_y', client_id: 'oc_console' });
  });

  it('revokes with the token, its hint and the client_id', async () => {
    const { sent, fetch } = recordingFetch(() => new Response(null, { status: 200 }));
    await createPublicOAuthClient({ clientId: 'oc_console', baseUrl: 'http://grantd.test', fetch }).revoke('svc_rt_y', 'refresh_token');
    expect(sent[0]!.url).toBe('http://grantd.test/v1/oauth/revoke');
    expect(Object.fromEntries(sent[0]!.body)).toEqual({ token: 'svc_rt_y', token_type_hint: 'refresh_token', client_id: 'oc_console' });
  });

  it('rejects with the RFC 6749 error as a ProblemError, and never sends a token request twice', async () => {
    const refused = recordingFetch(() => json(400, { error: 'invalid_grant', error_description: 'grant request is invalid' }));
    const error = await createPublicOAuthClient({ clientId: 'oc_c', baseUrl: 'http://grantd.test', fetch: refused.fetch })
      .refresh('svc_rt_used')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ type: 'invalid_grant', status: 400, detail: 'grant request is invalid' });
    // A spent refresh token presented again would revoke the grant: neither a 5xx nor a network error is retried.
    for (const answer of [() => json(500, { error: 'server_error' }), () => Promise.reject(new TypeError('fetch failed'))]) {
      const once = recordingFetch(answer);
      const failure = await createPublicOAuthClient({ clientId: 'oc_c', baseUrl: 'http://grantd.test', fetch: once.fetch })
        .refresh('svc_rt_y')
        .catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(Error);
      expect(once.sent).toHaveLength(1);
    }
    const network = await createPublicOAuthClient({
      clientId: 'oc_c',
      baseUrl: 'http://grantd.test',
      fetch: () => Promise.reject(new TypeError('fetch failed')),
    })
      .refresh('svc_rt_y')
      .catch((e: unknown) => e);
    expect(network).toBeInstanceOf(NetworkError);
  });
});
