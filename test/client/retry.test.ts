import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createClient,
  NetworkError,
  parseRetryAfter,
  ProblemError,
  TimeoutError,
  UnexpectedResponseError,
  type ClientOptions,
  type FetchLike,
  type GrantdClient,
} from '../../src/client/index.ts';
import { failure } from './support.ts';

// Retry and timeout mechanics with an injected fetch and sleep: no sockets, no real waiting.
const CHECK = { subject: 'user:alice', relation: 'viewer', object: 'document:q3' };

const problemResponse = (status: number, type: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type, title: type, status, detail: 'injected' }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });
const jsonResponse = (status: number, body: unknown) =>
  new Response(status === 204 ? null : JSON.stringify(body), { status, headers: status === 204 ? {} : { 'content-type': 'application/json' } });

/** A client whose fetch answers from `respond`, recording requests and the waits it was asked for. */
function fake(respond: (n: number, url: string, init: RequestInit) => Response | Promise<Response>, options: Partial<ClientOptions> = {}) {
  const requests: { url: string; init: RequestInit }[] = [];
  const waits: number[] = [];
  const fetchFake: FetchLike = async (url, init) => {
    requests.push({ url, init });
    return respond(requests.length, url, init);
  };
  const client = createClient({
    apiKey: 'svc_live_secret',
    baseUrl: 'http://grantd.test',
    fetch: fetchFake,
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...options,
  });
  return { client, requests, waits };
}

describe('backoff', () => {
  it('doubles from 100 ms, each wait drawn from [d/2, d]', async () => {
    const low = fake(() => problemResponse(503, 'unavailable'), { random: () => 0 });
    await failure(() => low.client.check(CHECK));
    expect(low.waits).toEqual([50, 100, 200]);
    expect(low.requests).toHaveLength(4);

    const high = fake(() => problemResponse(503, 'unavailable'), { random: () => 0.999999 });
    await failure(() => high.client.check(CHECK));
    expect(high.waits).toEqual([100, 200, 400]);
  });

  it('is capped by retry.maxDelayMs and tunable', async () => {
    const capped = fake(() => problemResponse(500, 'internal'), { random: () => 0.999999, retry: { baseDelayMs: 300, maxDelayMs: 500 } });
    await failure(() => capped.client.grants.list());
    expect(capped.waits).toEqual([300, 500, 500]);
  });

  it('retry.maxRetries lowers the number of retries; 0 disables them', async () => {
    const one = fake(() => problemResponse(503, 'unavailable'), { retry: { maxRetries: 1 } });
    expect((await failure(() => one.client.check(CHECK))).error).toMatchObject({ attempts: 2 });
    const none = fake(() => problemResponse(503, 'unavailable'), { retry: { maxRetries: 0 } });
    expect((await failure(() => none.client.check(CHECK))).error).toMatchObject({ attempts: 1 });
    expect(none.requests).toHaveLength(1);
  });
});

describe('Retry-After', () => {
  it('overrides the backoff: seconds', async () => {
    const f = fake((n) => (n < 3 ? problemResponse(429, 'rate-limited', { 'retry-after': '2' }) : jsonResponse(200, { allowed: true })));
    expect(await f.client.check(CHECK)).toEqual({ allowed: true });
    expect(f.waits).toEqual([2000, 2000]);
  });

  it('overrides the backoff: HTTP-date', async () => {
    const f = fake((n) =>
      n === 1
        ? problemResponse(503, 'unavailable', { 'retry-after': new Date(Date.now() + 3000).toUTCString() })
        : jsonResponse(200, { allowed: false }),
    );
    expect(await f.client.check(CHECK)).toEqual({ allowed: false });
    expect(f.waits[0]).toBeGreaterThan(1900);
    expect(f.waits[0]).toBeLessThanOrEqual(3000);
  });

  it('is not waited when it outlasts the timeout: the 429 is thrown after one attempt, without a sleep', async () => {
    const f = fake(() => problemResponse(429, 'rate-limited', { 'retry-after': '30' }));
    const { error } = await failure(() => f.client.check(CHECK));
    expect(error).toMatchObject({ type: 'rate-limited', status: 429, attempts: 1 });
    expect([f.requests.length, f.waits]).toEqual([1, []]);
  });

  it('an unreadable value falls back to the backoff', async () => {
    const f = fake((n) => (n === 1 ? problemResponse(503, 'unavailable', { 'retry-after': 'soon' }) : jsonResponse(200, { allowed: false })), {
      random: () => 0,
    });
    await f.client.check(CHECK);
    expect(f.waits).toEqual([50]);
  });

  it('parseRetryAfter reads both forms', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('Tuesday, 01-Jan-30 00:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Mon, 31 Dec 2029 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('-1', now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

describe('which calls are retried', () => {
  // Every method, with whether docs/client.md#retries lets the client repeat it.
  const calls: [string, boolean, (c: GrantdClient) => Promise<unknown>][] = [
    ['check', true, (c) => c.check(CHECK)],
    ['checkBulk', true, (c) => c.checkBulk({ checks: [CHECK] })],
    ['explain', true, (c) => c.explain(CHECK)],
    ['grants.create', true, (c) => c.grants.create(CHECK)],
    ['grants.revoke', true, (c) => c.grants.revoke(CHECK)],
    ['grants.list', true, (c) => c.grants.list()],
    ['grants.iterate', true, (c) => c.grants.iterate().next()],
    ['grants.batch', false, (c) => c.grants.batch({ writes: [CHECK] })],
    ['objects.list', true, (c) => c.objects.list({ namespace: 'document', subject: 'user:a', relation: 'viewer' })],
    ['objects.iterate', true, (c) => c.objects.iterate({ namespace: 'document', subject: 'user:a', relation: 'viewer' }).next()],
    ['subjects.list', true, (c) => c.subjects.list({ object: 'document:d1', relation: 'viewer', subject_namespace: 'user' })],
    ['subjects.iterate', true, (c) => c.subjects.iterate({ object: 'document:d1', relation: 'viewer', subject_namespace: 'user' }).next()],
    ['namespaces.list', true, (c) => c.namespaces.list()],
    ['namespaces.create', false, (c) => c.namespaces.create({ name: 'document' })],
    ['agents.create', false, (c) => c.agents.create({ external_id: 'bot', scope: [] })],
    ['agents.get', true, (c) => c.agents.get('bot')],
    ['agents.list', true, (c) => c.agents.list()],
    ['agents.iterate', true, (c) => c.agents.iterate().next()],
    ['agents.delete', true, (c) => c.agents.delete('bot')],
    ['keys.create', false, (c) => c.keys.create({ label: 'x' })],
    ['keys.list', true, (c) => c.keys.list()],
    ['keys.revoke', true, (c) => c.keys.revoke('key_1')],
  ];

  it.each(calls)('%s on 503: retried = %s', async (_, retried, call) => {
    const f = fake(() => problemResponse(503, 'unavailable'));
    const { error } = await failure(() => call(f.client));
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ type: 'unavailable', status: 503, attempts: retried ? 4 : 1 });
    expect(f.requests).toHaveLength(retried ? 4 : 1);
  });

  it.each(calls)('%s on a network error: retried = %s', async (_, retried, call) => {
    const f = fake(() => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) });
    });
    const { error } = await failure(() => call(f.client));
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ type: 'network-error', status: 0, attempts: retried ? 4 : 1 });
    expect((error as NetworkError).detail).toBe('fetch failed: read ECONNRESET (ECONNRESET)');
    expect(f.requests).toHaveLength(retried ? 4 : 1);
  });

  it('429, 500, 502 and 504 are retried; 400, 401, 403, 404, 409 and 413 are not', async () => {
    for (const status of [429, 500, 502, 504]) {
      const f = fake(() => problemResponse(status, 'x'));
      await failure(() => f.client.check(CHECK));
      expect(f.requests, `status ${status}`).toHaveLength(4);
    }
    for (const status of [400, 401, 403, 404, 409, 413]) {
      const f = fake(() => problemResponse(status, 'x'));
      await failure(() => f.client.check(CHECK));
      expect(f.requests, `status ${status}`).toHaveLength(1);
    }
  });
});

describe('requests', () => {
  it('carry the key, JSON bodies, encoded queries and path parameters', async () => {
    const f = fake((_n, url) =>
      url.includes('/objects')
        ? jsonResponse(200, { namespace: 'document', objects: [], next_cursor: null })
        : url.includes('/keys/')
          ? jsonResponse(204, null)
          : jsonResponse(200, { allowed: true }),
    );
    await f.client.check(CHECK);
    await f.client.objects.list({ namespace: 'document', subject: 'user:a b', relation: 'viewer', limit: 10 });
    await f.client.keys.revoke('key_a/b');
    const [check, objects, revoke] = f.requests;
    expect(check!.url).toBe('http://grantd.test/v1/check');
    expect(check!.init.method).toBe('POST');
    expect(check!.init.headers).toMatchObject({
      authorization: 'Bearer svc_live_secret',
      'content-type': 'application/json',
      accept: 'application/json, application/problem+json',
    });
    expect(JSON.parse(check!.init.body as string)).toEqual(CHECK);
    expect(check!.init.signal).toBeInstanceOf(AbortSignal);
    expect(objects!.url).toBe('http://grantd.test/v1/objects?namespace=document&subject=user%3Aa%20b&relation=viewer&limit=10');
    expect(objects!.init.method).toBe('GET');
    expect(objects!.init.body).toBeUndefined();
    expect(revoke!.url).toBe('http://grantd.test/v1/keys/key_a%2Fb');
    expect(revoke!.init.method).toBe('DELETE');
    expect(revoke!.init.body).toBeUndefined();
  });

  it('refuse path parameters that cannot form a path segment', async () => {
    const f = fake(() => jsonResponse(200, {}));
    for (const id of ['', '.', '..']) {
      await expect(f.client.agents.get(id)).rejects.toThrow(TypeError);
      await expect(f.client.agents.delete(id)).rejects.toThrow(TypeError);
      await expect(f.client.keys.revoke(id)).rejects.toThrow(TypeError);
    }
    expect(f.requests).toHaveLength(0);
  });
});

describe('responses', () => {
  it('a problem keeps its type, title, detail and errors, and the request id', async () => {
    const f = fake(
      () =>
        new Response(
          JSON.stringify({
            type: 'invalid-request',
            title: 'Invalid request',
            status: 400,
            detail: 'body.name: bad',
            errors: [{ path: 'body.name', message: 'bad' }],
          }),
          { status: 400, headers: { 'content-type': 'application/problem+json; charset=utf-8', 'x-request-id': 'req-1' } },
        ),
    );
    const { error } = await failure(() => f.client.namespaces.create({ name: 'X' }));
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).not.toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({
      name: 'ProblemError',
      type: 'invalid-request',
      status: 400,
      title: 'Invalid request',
      detail: 'body.name: bad',
      errors: [{ path: 'body.name', message: 'bad' }],
      requestId: 'req-1',
      message: 'Invalid request: body.name: bad',
    });
  });

  it('a non-problem error response is an unexpected-response ProblemError', async () => {
    const f = fake(() => new Response('', { status: 502 }), { retry: { maxRetries: 0 } });
    const { error } = await failure(() => f.client.check(CHECK));
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toMatchObject({
      name: 'UnexpectedResponseError',
      type: 'unexpected-response',
      status: 502,
      title: 'HTTP 502',
      detail: 'empty body',
    });
    const g = fake(() => new Response(JSON.stringify({ message: 'no' }), { status: 400, headers: { 'content-type': 'application/json' } }));
    expect((await failure(() => g.client.check(CHECK))).error).toMatchObject({
      type: 'unexpected-response',
      status: 400,
      detail: '{"message":"no"}',
    });
  });

  it('a success the client cannot read is an unexpected-response, not retried', async () => {
    const html = fake(() => new Response('<html>portal</html>', { status: 200, headers: { 'content-type': 'text/html' } }));
    expect((await failure(() => html.client.check(CHECK))).error).toMatchObject({ type: 'unexpected-response', status: 200, attempts: 1 });
    const broken = fake(() => new Response('{"allowed":', { status: 200, headers: { 'content-type': 'application/json' } }));
    expect((await failure(() => broken.client.check(CHECK))).error).toMatchObject({ type: 'unexpected-response', status: 200 });
    const undeclared = fake(() => jsonResponse(202, { allowed: true }));
    expect((await failure(() => undeclared.client.check(CHECK))).error).toMatchObject({ type: 'unexpected-response', status: 202 });
  });

  it('grants.create accepts both 201 and 200', async () => {
    const grant = { ...CHECK, created_at: '2030-01-01T00:00:00.000Z' };
    const f = fake((n) => jsonResponse(n === 1 ? 201 : 200, grant));
    // A fake server names no revision.
    expect(await f.client.grants.create(CHECK)).toEqual({ ...grant, revision: null });
    expect(await f.client.grants.create(CHECK)).toEqual({ ...grant, revision: null });
  });
});

describe('timeout', () => {
  it('does not wait a backoff that would outlast the timeout: the last error is thrown without a sleep', async () => {
    const f = fake(() => problemResponse(503, 'unavailable'), { retry: { baseDelayMs: 1000 }, random: () => 1 });
    const { error } = await failure(() => f.client.check(CHECK, { timeoutMs: 300 }));
    expect(error).toMatchObject({ type: 'unavailable', status: 503, attempts: 1 });
    expect([f.requests.length, f.waits]).toEqual([1, []]);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  /** The call's outcome so far, on a fake clock: 'pending', or what it rejected with. */
  const outcomeOf = (call: Promise<unknown>) => {
    const outcome: { error: unknown } = { error: 'pending' };
    call.then(
      () => (outcome.error = 'resolved'),
      (error: unknown) => (outcome.error = error),
    );
    return outcome;
  };

  it('fails at its timeout even with a fetch that ignores the abort signal', async () => {
    vi.useFakeTimers();
    const f = fake(() => new Promise<Response>(() => undefined));
    const outcome = outcomeOf(f.client.check(CHECK, { timeoutMs: 50 }));
    await vi.advanceTimersByTimeAsync(49);
    expect(outcome.error).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.error).toBeInstanceOf(TimeoutError);
    expect(outcome.error).toMatchObject({ name: 'TimeoutError', type: 'timeout', status: 0, title: 'Timeout', timeoutMs: 50, attempts: 1 });
  });

  it('aborts the request in flight', async () => {
    let signal: AbortSignal | undefined;
    const f = fake((_n, _url, init) => {
      signal = init.signal ?? undefined;
      return new Promise<Response>(() => undefined);
    });
    await failure(() => f.client.check(CHECK, { timeoutMs: 20 }));
    expect(signal?.aborted).toBe(true);
  });

  it('cuts a wait short: a sleep that never ends still times out, at its timeout', async () => {
    vi.useFakeTimers();
    const f = fake(() => problemResponse(503, 'unavailable', { 'retry-after': '0' }), { sleep: () => new Promise(() => undefined) });
    const outcome = outcomeOf(f.client.check(CHECK, { timeoutMs: 50 }));
    await vi.advanceTimersByTimeAsync(49);
    expect(outcome.error).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(outcome.error).toMatchObject({ type: 'timeout', attempts: 1 });
  });

  it('Infinity means no timeout; zero, negative and NaN are RangeErrors', async () => {
    const f = fake(() => jsonResponse(200, { allowed: true }));
    expect(await f.client.check(CHECK, { timeoutMs: Infinity })).toEqual({ allowed: true });
    for (const timeoutMs of [0, -1, Number.NaN]) await expect(f.client.check(CHECK, { timeoutMs })).rejects.toThrow(RangeError);
    expect(f.requests).toHaveLength(1);
  });
});
