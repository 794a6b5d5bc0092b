import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { once } from 'node:events';
import { connect } from 'node:net';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { DEFAULT_HTTP_OPTIONS, type HttpOptions } from '../../src/http/options.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { DOCUMENT_NAMESPACE, exchange, headerOf, newTenant, useApp } from '../helpers.ts';

const { services, app } = useApp();
let server: Server;
let port: number;

beforeAll(async () => {
  server = createHttpServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Sends raw bytes and reads the answer until the server closes the connection. */
function rawExchange(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(bytes));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

const problemOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { type: string; status: number };

describe('the HTTP server', () => {
  it("makes each request and response with the app's Express prototypes, so that Express need not change them", async () => {
    const seen: [object | null, object | null][] = [];
    const record = (req: IncomingMessage, res: ServerResponse) => seen.push([Object.getPrototypeOf(req), Object.getPrototypeOf(res)]);
    server.prependListener('request', record);
    try {
      const tenant = await newTenant(services);
      const api = supertest(server);
      const auth = { Authorization: `Bearer ${tenant.adminKey}` };
      expect((await api.post('/v1/namespaces').set(auth).send(DOCUMENT_NAMESPACE)).status).toBe(201);
      expect((await api.post('/v1/grants').set(auth).send({ subject: 'user:alice', relation: 'owner', object: 'document:q3' })).status).toBe(201);
      const check = await api.post('/v1/check').set(auth).send({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' });
      expect(check.body).toEqual({ allowed: true });
      expect(check.headers['x-request-id']).toEqual(expect.any(String));
    } finally {
      server.removeListener('request', record);
    }
    expect(seen).toHaveLength(3);
    for (const [request, response] of seen) {
      expect(request).toBe(app.request);
      expect(response).toBe(app.response);
    }
  });

  it('answers headers over 16 KiB and malformed HTTP with 400 invalid-request problems, before any route runs', async () => {
    const oversized = await rawExchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Padding: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    expect(oversized).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(oversized).toMatch(/\r\nContent-Type: application\/problem\+json\r\n/);
    expect(problemOf(oversized)).toMatchObject({ type: 'invalid-request', status: 400, detail: 'the request line and headers exceed 16 KiB' });

    const malformed = await rawExchange('NOT HTTP AT ALL\r\n\r\n');
    expect(malformed).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(problemOf(malformed)).toMatchObject({ type: 'invalid-request', status: 400 });
  });
});

/** A server of the app with the given options, on a free port of 127.0.0.1, closed after the file's tests. */
function useServer(options: HttpOptions) {
  const state = { server: undefined as Server | undefined, port: 0 };
  beforeAll(async () => {
    state.server = createHttpServer(createApp(services, options), options);
    await new Promise<void>((resolve) => state.server!.listen(0, '127.0.0.1', resolve));
    state.port = (state.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    state.server?.closeAllConnections();
    await new Promise<void>((resolve) => state.server?.close(() => resolve()));
  });
  return state;
}

// A plain application/json body that has all arrived with its headers (one write, as here) is read by a fast path
// (docs/decisions.md#a-request-pays-for-what-it-needs-and-no-more); a +json type goes through body-parser: both must answer alike.
describe('the fast path for bodies that have arrived', () => {
  let key: string;
  beforeAll(async () => {
    key = (await newTenant(services)).adminKey;
  });
  const answer = async (type: string, body: string) => {
    const head = `POST /v1/check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: ${type}\r\n`;
    // Written in one piece and not half-closed (rawExchange ends its side, and the server then drops an answer still to come).
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`${head}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`),
    );
    let raw = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
    await once(socket, 'end');
    return { status: raw.slice(0, raw.indexOf('\r\n')), body: JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as unknown };
  };

  // Each with its problem: a valid body reaches the engine, which knows no such namespace in this tenant.
  it.each([
    ['valid', '{"subject":"user:a","relation":"viewer","object":"document:x"}', 'namespace-not-found'],
    ['valid after a byte order mark', '\ufeff{"subject":"user:a","relation":"viewer","object":"document:x"}', 'namespace-not-found'],
    ['valid after whitespace', ' \n\t{"subject":"user:a","relation":"viewer","object":"document:x"}', 'namespace-not-found'],
    ['malformed', '{"subject": ', 'invalid-request'],
    ['a string', '"text"', 'invalid-request'],
    ['a number after whitespace', '  12', 'invalid-request'],
    ['an array', '[1,2]', 'invalid-request'],
    ['only whitespace', '   ', 'invalid-request'],
  ])('answers a body (%s) as body-parser does', async (_, body, type) => {
    const fast = await answer('application/json', body);
    expect(fast).toEqual(await answer('application/vnd.grantd+json', body));
    expect(fast.body).toMatchObject({ type });
  });
});

describe('the HTTP server with short timeouts', () => {
  const options = { ...DEFAULT_HTTP_OPTIONS, headersTimeoutMs: 1_000, bodyTimeoutMs: 1_000, keepAliveTimeoutMs: 1_000 };
  const bounded = useServer(options);
  // Idle connections stay open for 10 minutes: only a request's own timeout can close one sooner.
  const patient = useServer({ ...options, keepAliveTimeoutMs: 600_000 });
  let key: string;
  beforeAll(async () => {
    key = (await newTenant(services)).adminKey;
  });

  it("sets Node's timeouts from its options: the whole request may take the headers' and the body's time", () => {
    expect(bounded.server!.headersTimeout).toBe(1_000);
    expect(bounded.server!.requestTimeout).toBe(2_000);
    expect(bounded.server!.keepAliveTimeout).toBe(1_000);
  });

  it('answers a body that does not arrive in time with 400 invalid-request, then closes the connection', async () => {
    const body = JSON.stringify({ name: 'slow' });
    const { closed } = exchange(
      bounded.port,
      `POST /v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    const { answer, afterMs } = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(headerOf(answer, 'Content-Type')).toMatch(/^application\/problem\+json/);
    expect(headerOf(answer, 'Connection')).toBe('close');
    expect(headerOf(answer, 'X-Request-Id')).toEqual(expect.any(String));
    expect(problemOf(answer)).toMatchObject({ type: 'invalid-request', status: 400, detail: 'the body did not arrive within 1 s' });
    expect(afterMs).toBeGreaterThanOrEqual(options.bodyTimeoutMs - 50);
    // Nothing was written: the namespace does not exist.
    const namespaces = await supertest(bounded.server!).get('/v1/namespaces').set('Authorization', `Bearer ${key}`);
    expect(namespaces.body.namespaces.map((n: { name: string }) => n.name)).not.toContain('slow');
  });

  it('answers headers that do not arrive in time with 400 invalid-request, then closes the connection', async () => {
    const { closed } = exchange(bounded.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const { answer, afterMs } = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(problemOf(answer)).toMatchObject({
      type: 'invalid-request',
      status: 400,
      detail: 'the request did not arrive in time: its headers within 1 s, its body within 1 s more',
    });
    expect(afterMs).toBeGreaterThanOrEqual(options.headersTimeoutMs - 50);
  });

  it('closes the connection of a late body no route reads at the request timeout, after the one answer it had (401)', async () => {
    const timedOut = once(patient.server!, 'clientError');
    const { closed } = exchange(
      patient.port,
      'POST /v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
    );
    const { answer, afterMs } = await closed;
    const [error] = (await timedOut) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ERR_HTTP_REQUEST_TIMEOUT');
    expect(afterMs).toBeGreaterThanOrEqual(options.headersTimeoutMs + options.bodyTimeoutMs - 50);
    expect(answer).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    expect(answer.match(/HTTP\/1\.1 \d{3} /g)).toHaveLength(1); // no second answer to the same request
  });

  it('closes a connection left idle between requests after the keep-alive timeout, and says so', async () => {
    const { closed } = exchange(bounded.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const { answer, afterMs } = await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(headerOf(answer, 'Keep-Alive')).toBe('timeout=1');
    expect(afterMs).toBeGreaterThanOrEqual(options.keepAliveTimeoutMs - 50);
  });
});

describe('the HTTP server at its connection cap', () => {
  const capped = useServer({ ...DEFAULT_HTTP_OPTIONS, maxConnections: 2 });

  const openConnections = () =>
    new Promise<number>((resolve, reject) => capped.server!.getConnections((error, count) => (error ? reject(error) : resolve(count))));

  it('closes connections past the cap at once, counts them as dropped, and serves again once one closes', async () => {
    const dropped: unknown[] = [];
    capped.server!.on('drop', (data) => dropped.push(data));
    services.metrics.countDrops(capped.server!);
    const held = [exchange(capped.port, 'GET /healthz HTTP/1.1\r\n'), exchange(capped.port, 'GET /healthz HTTP/1.1\r\n')];
    await expect.poll(openConnections).toBe(2);

    const refused = await exchange(capped.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n').closed;
    expect(refused.answer).toBe('');
    expect(dropped).toHaveLength(1);
    expect(await services.metrics.exposition()).toMatch(/^grantd_http_connections_dropped_total 1$/m);

    held[0]!.socket.destroy();
    await held[0]!.closed;
    await expect.poll(openConnections).toBe(1);
    expect((await supertest(capped.server!).get('/healthz')).status).toBe(200);
    held[1]!.socket.destroy();
  });
});
