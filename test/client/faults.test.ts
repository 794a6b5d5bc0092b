import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createClient, NetworkError, ProblemError, ServiceError, TimeoutError, UnexpectedResponseError } from '../../src/client/index.ts';
import { failure, json, problem, reset, useFaultServer } from './support.ts';

// Retries and timeouts against a real HTTP server that injects faults. Only real timers and sockets:
// waits are bounded below here, and their upper bounds are checked without a clock in retry.test.ts.
const faults = useFaultServer();
const client = () => createClient({ apiKey: 'svc_live_test', baseUrl: faults.url });
const CHECK = { subject: 'user:alice', relation: 'viewer', object: 'document:q3' };
const ALLOWED = { allowed: true };

describe('retries of idempotent calls', () => {
  it('retries after a connection reset, then succeeds', async () => {
    faults.reply((req, res, { n }) => (n === 1 ? reset(req) : json(res, 200, ALLOWED)));
    expect(await client().check(CHECK)).toEqual(ALLOWED);
    expect(faults.attempts.map((a) => [a.method, a.path, JSON.parse(a.body)])).toEqual([
      ['POST', '/v1/check', CHECK],
      ['POST', '/v1/check', CHECK],
    ]);
  });

  it('retries after 503 twice, then succeeds, with growing backoff', async () => {
    faults.reply((_req, res, { n }) => (n <= 2 ? problem(res, 503, 'unavailable') : json(res, 200, { namespaces: [] })));
    expect(await client().namespaces.list()).toEqual({ namespaces: [] });
    expect(faults.attempts).toHaveLength(3);
    const [a, b, c] = faults.attempts.map((x) => x.at);
    expect(b! - a!).toBeGreaterThanOrEqual(45); // first wait drawn from [50, 100] ms
    expect(c! - b!).toBeGreaterThanOrEqual(95); // second from [100, 200] ms
  });

  it('honours Retry-After: 1 on a 429', async () => {
    faults.reply((_req, res, { n }) => (n === 1 ? problem(res, 429, 'rate-limited', { 'retry-after': '1' }) : json(res, 200, ALLOWED)));
    expect(await client().check(CHECK)).toEqual(ALLOWED);
    expect(faults.attempts).toHaveLength(2);
    const waited = faults.attempts[1]!.at - faults.attempts[0]!.at;
    expect(waited).toBeGreaterThanOrEqual(990);
  });

  it('honours Retry-After as an HTTP-date', async () => {
    faults.reply((_req, res, { n }) =>
      n === 1 ? problem(res, 503, 'unavailable', { 'retry-after': new Date(Date.now() + 2000).toUTCString() }) : json(res, 200, ALLOWED),
    );
    expect(await client().check(CHECK)).toEqual(ALLOWED);
    const waited = faults.attempts[1]!.at - faults.attempts[0]!.at;
    // The date has a one-second resolution: the wait is between 1 and 2 s.
    expect(waited).toBeGreaterThanOrEqual(980);
  });

  it('gives up after 3 retries: 500 four times is exactly 4 attempts and a ProblemError 500', async () => {
    faults.reply((_req, res) => problem(res, 500, 'internal'));
    const { error } = await failure(() => client().grants.create(CHECK));
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ type: 'internal', status: 500, title: 'internal', detail: 'injected 500', attempts: 4 });
    expect(faults.attempts).toHaveLength(4);
  });

  it('a non-problem 502 (a proxy page) is retried, then thrown as an unexpected-response ProblemError', async () => {
    faults.reply((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
    });
    const { error } = await failure(() => createClient({ apiKey: 'k', baseUrl: faults.url, retry: { baseDelayMs: 5 } }).grants.list());
    expect(error).toBeInstanceOf(UnexpectedResponseError);
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ type: 'unexpected-response', status: 502, title: 'HTTP 502', attempts: 4 });
    expect((error as ServiceError).detail).toContain('502 Bad Gateway');
    expect(faults.attempts).toHaveLength(4);
  });

  it('retries every DELETE: grants.revoke, agents.delete, keys.revoke', async () => {
    faults.reply((_req, res, { n }) => (n % 2 === 1 ? problem(res, 503, 'unavailable', { 'retry-after': '0' }) : res.writeHead(204).end()));
    await client().grants.revoke(CHECK);
    await client().keys.revoke('key_1');
    expect(faults.attempts.map((a) => `${a.method} ${a.path}`)).toEqual([
      'DELETE /v1/grants',
      'DELETE /v1/grants',
      'DELETE /v1/keys/key_1',
      'DELETE /v1/keys/key_1',
    ]);
    faults.reply((req, res, { n }) => (n === 1 ? reset(req) : json(res, 200, { external_id: 'bot', grants_removed: 2, clients_removed: 0 })));
    // A fake server names no revision.
    expect(await client().agents.delete('bot')).toEqual({ external_id: 'bot', grants_removed: 2, clients_removed: 0, revision: null });
    expect(faults.attempts).toHaveLength(2);
  });

  it('does not retry a 4xx', async () => {
    faults.reply((_req, res) => problem(res, 404, 'namespace-not-found'));
    const { error } = await failure(() => client().check(CHECK));
    expect(error).toMatchObject({ type: 'namespace-not-found', status: 404, attempts: 1 });
    expect(faults.attempts).toHaveLength(1);
  });

  it('does not wait for a Retry-After that outlasts the timeout: the 429 is thrown at once', async () => {
    faults.reply((_req, res) => problem(res, 429, 'rate-limited', { 'retry-after': '30' }));
    const { error } = await failure(() => client().check(CHECK));
    expect(error).toMatchObject({ type: 'rate-limited', status: 429, attempts: 1 });
    expect(faults.attempts).toHaveLength(1);
  });
});

describe('calls that are never retried', () => {
  it('namespaces.create on a 503: exactly 1 attempt', async () => {
    faults.reply((_req, res) => problem(res, 503, 'unavailable', { 'retry-after': '0' }));
    const { error } = await failure(() => client().namespaces.create({ name: 'document' }));
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ type: 'unavailable', status: 503, attempts: 1 });
    expect(faults.attempts).toHaveLength(1);
  });

  it('keys.create, agents.create and grants.batch on a 503: 1 attempt each', async () => {
    faults.reply((_req, res) => problem(res, 503, 'unavailable', { 'retry-after': '0' }));
    await failure(() => client().keys.create({ label: 'x' }));
    await failure(() => client().agents.create({ external_id: 'bot', scope: [] }));
    await failure(() => client().grants.batch({ writes: [CHECK] }));
    expect(faults.attempts.map((a) => `${a.method} ${a.path}`)).toEqual(['POST /v1/keys', 'POST /v1/agents', 'POST /v1/grants/batch']);
  });

  it('agents.create on a connection reset: NetworkError after 1 attempt', async () => {
    faults.reply((req) => reset(req));
    const { error } = await failure(() => client().agents.create({ external_id: 'bot', scope: [] }));
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ type: 'network-error', status: 0, attempts: 1 });
    expect(faults.attempts).toHaveLength(1);
  });
});

describe('network errors', () => {
  it('a reset on every attempt is a NetworkError after exactly 4 attempts', async () => {
    faults.reply((req) => reset(req));
    const { error } = await failure(() => client().objects.list({ namespace: 'document', subject: 'user:alice', relation: 'viewer' }));
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ type: 'network-error', status: 0, title: 'Network error', attempts: 4 });
    expect((error as NetworkError).cause).toBeInstanceOf(Error);
    expect(faults.attempts).toHaveLength(4);
  });

  it('a refused connection is a NetworkError after 4 attempts', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { error } = await failure(() => createClient({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}` }).check(CHECK));
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ type: 'network-error', status: 0, attempts: 4 });
    expect((error as NetworkError).detail).toMatch(/ECONNREFUSED/);
  });
});

describe('timeouts', () => {
  const hang = () => faults.reply(() => undefined); // never answers

  it('a call with no answer fails with TimeoutError at the default 5 s', { timeout: 15_000 }, async () => {
    hang();
    const { error, ms } = await failure(() => client().check(CHECK));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ type: 'timeout', status: 0, timeoutMs: 5000, attempts: 1 });
    expect(ms).toBeGreaterThanOrEqual(4990);
    expect(faults.attempts).toHaveLength(1);
  });

  it('a per-call timeoutMs of 200 fails quickly', async () => {
    hang();
    const { error, ms } = await failure(() => client().namespaces.list({ timeoutMs: 200 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ type: 'timeout', status: 0, timeoutMs: 200 });
    expect(ms).toBeGreaterThanOrEqual(195);
  });

  it('a client-wide timeoutMs applies to every call', async () => {
    hang();
    const { error, ms } = await failure(() => createClient({ apiKey: 'k', baseUrl: faults.url, timeoutMs: 150 }).keys.list());
    expect(error).toMatchObject({ type: 'timeout', timeoutMs: 150 });
    expect(ms).toBeGreaterThanOrEqual(145);
  });

  it('a body that stalls after the headers also times out', async () => {
    faults.reply((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"allowed":');
    });
    const { error, ms } = await failure(() => client().check(CHECK, { timeoutMs: 200 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(ms).toBeGreaterThanOrEqual(195);
  });

  it('the timeout bounds the whole call, retries included', async () => {
    // First attempt: 503 asking for a retry in 0 s; second attempt: no answer.
    faults.reply((_req, res, { n }) => (n === 1 ? problem(res, 503, 'unavailable', { 'retry-after': '0' }) : undefined));
    const { error, ms } = await failure(() => client().check(CHECK, { timeoutMs: 300 }));
    expect(error).toMatchObject({ type: 'timeout', attempts: 2 });
    expect(ms).toBeGreaterThanOrEqual(295);
    expect(faults.attempts).toHaveLength(2);
  });

  it('a backoff that would outlast the timeout is not waited: the last error is thrown at once', async () => {
    faults.reply((_req, res) => problem(res, 503, 'unavailable'));
    const patient = createClient({ apiKey: 'k', baseUrl: faults.url, retry: { baseDelayMs: 1000 } });
    const { error } = await failure(() => patient.check(CHECK, { timeoutMs: 300 }));
    expect(error).toMatchObject({ type: 'unavailable', status: 503, attempts: 1 });
    expect(faults.attempts).toHaveLength(1);
  });
});
