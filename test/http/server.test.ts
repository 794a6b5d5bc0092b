import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../src/http/server.ts';
import { DOCUMENT_NAMESPACE, newTenant, useApp } from '../helpers.ts';

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
    const seen: Array<[object | null, object | null]> = [];
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
