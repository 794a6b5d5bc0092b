import express from 'express';
import pino from 'pino';
import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { RetryLater } from '../../src/errors.ts';
import { createApp } from '../../src/http/app.ts';
import { errorHandler } from '../../src/http/middleware/errors.ts';
import type { AuthorizationEngine } from '../../src/engine/engine.ts';
import { newTenant, useApp } from '../helpers.ts';
import { everyContractRoute } from './routes.ts';

const { services, app } = useApp();
let key: string;

beforeAll(async () => {
  key = (await newTenant(services)).adminKey;
});

const post = (path: string) => supertest(app).post(path).set('Authorization', `Bearer ${key}`);

const expectProblem = (res: supertest.Response, status: number, type: string) => {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type, status, title: expect.any(String), detail: expect.any(String) });
  expect(res.text).not.toMatch(/at .*\.(ts|js):\d+|SELECT|INSERT|svc_live_/);
};

describe('problems for bad requests', () => {
  it('answers malformed JSON with 400 invalid-request', async () => {
    const res = await post('/v1/check').set('Content-Type', 'application/json').send('{"subject": ');
    expectProblem(res, 400, 'invalid-request');
    expect(res.body.detail).toBe('the body is not valid JSON: value expected at line 1, column 13');
    expect((await post('/v1/check').set('Content-Type', 'application/json').send('nul')).body.detail).toBe(
      'the body is not valid JSON: invalid symbol at line 1, column 1',
    );
  });

  // Both parsers: the fast path's (plain application/json) and body-parser's (any other JSON type).
  it('says where JSON goes wrong, by line and column, without quoting the body', async () => {
    const secret = 'svc_live_0123456789abcdefghijABCDEFGHIJ0123456789';
    for (const type of ['application/json', 'application/merge-patch+json']) {
      const res = await post('/v1/check').set('Content-Type', type).send(`{"subject": "user:a",\n "relation": ${secret}}`);
      expectProblem(res, 400, 'invalid-request');
      expect(res.body.detail, type).toBe('the body is not valid JSON: invalid symbol at line 2, column 14');
      const trailing = await post('/v1/check').set('Content-Type', type).send('{"subject": "user:a",}');
      expect(trailing.body.detail, type).toBe('the body is not valid JSON: property name expected at line 1, column 22');
    }
  });

  it('answers a body over 1 MiB with 413 payload-too-large', async () => {
    const big = JSON.stringify({ checks: [{ subject: `user:${'a'.repeat(1024 * 1024)}`, relation: 'r', object: 'd:x' }] });
    expectProblem(await post('/v1/check/bulk').set('Content-Type', 'application/json').send(big), 413, 'payload-too-large');
  });

  it('answers a body that is not JSON with 415 unsupported-media-type', async () => {
    expectProblem(await post('/v1/check').set('Content-Type', 'text/plain').send('subject=user:alice'), 415, 'unsupported-media-type');
    expectProblem(await post('/v1/check').type('form').send({ subject: 'user:alice' }), 415, 'unsupported-media-type');
  });

  it('accepts application/json with a charset and +json types', async () => {
    const res = await post('/v1/namespaces')
      .set('Content-Type', 'application/merge-patch+json; charset=utf-8')
      .send(JSON.stringify({ name: 'plusjson' }));
    expect(res.status).toBe(201);
  });

  it('answers a missing body with 400 invalid-request listing the missing fields', async () => {
    const res = await post('/v1/check');
    expectProblem(res, 400, 'invalid-request');
    expect(res.body.errors.map((e: { path: string }) => e.path).sort()).toEqual(['body']);
  });

  it('answers JSON that is not an object with 400', async () => {
    expectProblem(await post('/v1/check').set('Content-Type', 'application/json').send('"text"'), 400, 'invalid-request');
    expectProblem(await post('/v1/check').set('Content-Type', 'application/json').send('[1,2]'), 400, 'invalid-request');
  });

  // Both parsers: the fast path's (plain application/json) and body-parser's (any other JSON type).
  it.each([
    ['null', 'null'],
    [' 5', 'a number'],
    ['"text"', 'a string'],
    ['true', 'a boolean'],
  ])('says JSON %s is valid JSON but must be an object', async (text, kind) => {
    for (const type of ['application/json', 'application/problem+json']) {
      const res = await post('/v1/check').set('Content-Type', type).send(text);
      expectProblem(res, 400, 'invalid-request');
      expect(res.body.detail, type).toBe(`the body must be a JSON object, not ${kind}`);
    }
  });

  it.each([
    ['GET', '/nope'],
    ['GET', '/v1'],
    ['GET', '/v1/checks'],
    ['PUT', '/v1/grant'],
    ['POST', '/v1/keys/key_x/y'],
    // Paths match exactly: neither another case nor a trailing slash (docs/api.md).
    ['GET', '/V1/keys'],
    ['GET', '/v1/Keys'],
    ['GET', '/v1/keys/'],
    ['POST', '/v1/check/'],
    ['GET', '/v1/namespaces/user/'],
    ['GET', '/healthz/'],
    ['GET', '/Healthz'],
    ['GET', '/openapi.json/'],
    ['GET', '/Docs'],
    ['GET', '/docs/swagger-initializer.js/'],
    ['GET', '/console/callback/'],
    ['GET', '/.well-known/oauth-protected-resource/'],
    ['GET', '/v1/oauth/introspect/'],
  ])('answers %s %s with 404 not-found', async (method, path) => {
    const res = await supertest(app)[method.toLowerCase() as 'get'](path).set('Authorization', `Bearer ${key}`);
    expectProblem(res, 404, 'not-found');
  });

  it('answers a known path asked with another method with 405 method-not-allowed and Allow, before the key is looked at', async () => {
    for (const [method, path, allow] of [
      ['GET', '/v1/check', 'POST'],
      ['PUT', '/v1/grants', 'DELETE, GET, HEAD, POST'],
      ['POST', '/v1/keys/key_x', 'DELETE'],
      ['PATCH', '/v1/namespaces/document', 'DELETE, GET, HEAD, PUT'],
      ['DELETE', '/v1/oauth/introspect', 'GET, HEAD, POST'],
    ] as const) {
      const res = await supertest(app)[method.toLowerCase() as 'get'](path);
      expectProblem(res, 405, 'method-not-allowed');
      expect(res.headers.allow, `${method} ${path}`).toBe(allow);
      expect(res.body.detail).toBe(`${method} is not allowed on ${path}; it takes ${allow}`);
    }
  });

  it('answers 405 on every path of the contract for each method it does not take, with the methods it takes in Allow', async () => {
    const byPath = new Map<string, Set<string>>();
    for (const { route } of everyContractRoute()) byPath.set(route.path, (byPath.get(route.path) ?? new Set()).add(route.method));
    for (const [path, taken] of byPath) {
      if (taken.has('GET')) taken.add('HEAD');
      const concrete = path.replace(/:[a-z_]+/g, 'x1');
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => !taken.has(m))) {
        const res = await supertest(app)[method.toLowerCase() as 'get'](concrete).set('Authorization', `Bearer ${key}`);
        // Express's router answers OPTIONS on the OAuth protocol's paths itself: 200, with the same Allow.
        expect(res.status, `${method} ${path}`).toBe(method === 'OPTIONS' && res.status === 200 ? 200 : 405);
        expect(res.headers.allow, `${method} ${path}`).toBe([...taken].sort().join(', '));
      }
      // And each method Allow lists is served: neither 405 nor 404 `not-found` (no route) for it.
      for (const method of taken) {
        const res = await supertest(app)[method.toLowerCase() as 'get'](concrete).set('Authorization', `Bearer ${key}`);
        expect(res.status === 405 || res.body?.type === 'not-found', `${method} ${path} answered ${res.status}`).toBe(false);
      }
    }
  });

  it('shows at most 1024 characters of a path, in the problem and in the log line, with a marker', async () => {
    const lines: string[] = [];
    const logged = createApp({ ...services, logger: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }) });
    const path = `/${'p'.repeat(15 * 1024)}`;
    const res = await supertest(logged).get(path);
    expectProblem(res, 404, 'not-found');
    const shown = `${path.slice(0, 1024)}...(${path.length - 1024} more characters)`;
    expect(res.body.detail).toBe(`no route GET ${shown}`);
    const requestLines = lines.filter((line) => line.includes('"msg":"request"'));
    expect(requestLines).toHaveLength(1);
    expect(JSON.parse(requestLines[0]!).path).toBe(shown);
    expect(requestLines[0]!.length).toBeLessThan(1024 + 300);
  });

  it('ignores prototype-pollution keys rather than failing', async () => {
    const res = await post('/v1/namespaces')
      .set('Content-Type', 'application/json')
      .send('{"name": "proto", "relations": {"__proto__": {"includes": ["x"]}, "viewer": {}}}');
    expect(res.status).toBe(400);
    expect(({} as Record<string, unknown>).includes).toBeUndefined();
  });
});

describe('operator endpoints', () => {
  it('answers /healthz and /readyz without a key', async () => {
    expect((await supertest(app).get('/healthz')).body).toEqual({ status: 'ok' });
    expect((await supertest(app).get('/readyz')).status).toBe(200);
  });

  it('echoes a sane X-Request-Id and makes one up otherwise', async () => {
    expect((await supertest(app).get('/healthz').set('X-Request-Id', 'abc-123')).headers['x-request-id']).toBe('abc-123');
    expect(
      (
        await supertest(app)
          .get('/healthz')
          .set('X-Request-Id', `bad id ${'x'.repeat(200)}`)
      ).headers['x-request-id'],
    ).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('database statements that did not finish', () => {
  /** An app whose one route fails with `error`, and the lines its error handler logs. */
  const failingWith = (error: unknown) => {
    const lines: { msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const failing = express();
    failing.get('/fail', () => {
      throw error;
    });
    failing.use(errorHandler(logger, () => 'Bearer realm="grantd"'));
    return { request: () => supertest(failing).get('/fail'), lines };
  };
  const cancelled = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
  const prismaCancelled = { name: 'PrismaClientKnownRequestError', message: 'x', meta: { driverAdapterError: { cause: { originalCode: '57014' } } } };

  it.each([
    ['from pg', cancelled],
    ['from Prisma', prismaCancelled],
  ])('answer a statement cancelled after its time limit (%s) with its own 503, not as an outage', async (_from, error) => {
    const { request, lines } = failingWith(error);
    const res = await request();
    expectProblem(res, 503, 'unavailable');
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(res.body.detail).toMatch(/cancelled after its time limit/);
    expect(res.body.detail).not.toMatch(/unreachable/);
    expect(lines.map((l) => l.msg)).toEqual(['query cancelled after its time limit']);
  });

  it('answer a request refused for now with 503 and Retry-After, logged with its reason', async () => {
    const { request, lines } = failingWith(new RetryLater('too many at once; retry shortly', 'tenant over its share'));
    const res = await request();
    expectProblem(res, 503, 'unavailable');
    expect(res.headers['retry-after']).toBe('1');
    expect(res.body.detail).toBe('too many at once; retry shortly');
    expect(lines).toMatchObject([{ msg: 'request refused for now', reason: 'tenant over its share' }]);
  });
});

describe('an unexpected error in a route', () => {
  it('answers 500 internal saying nothing of it but the request id, and logs the error whole', async () => {
    const bug = new Error('column "secret_hash" of relation "api_keys" is ambiguous: SELECT secret_hash FROM api_keys WHERE prefix = $1');
    // The seam: the real app and routes over an engine whose checks fail as a bug would.
    const engine = Object.assign(Object.create(services.engine) as AuthorizationEngine, {
      check: async () => {
        throw bug;
      },
    });
    const lines: { msg: string; reqId: string; err: { message: string; stack: string } }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const failing = createApp({ ...services, engine, logger });
    const res = await supertest(failing)
      .post('/v1/check')
      .set('Authorization', `Bearer ${key}`)
      .set('X-Request-Id', 'req-500')
      .send({ subject: 'user:a', relation: 'viewer', object: 'doc:1' });
    expectProblem(res, 500, 'internal');
    expect(res.body).toEqual({
      type: 'internal',
      title: expect.any(String),
      status: 500,
      detail: 'an internal error occurred; quote request id req-500 when reporting it',
    });
    expect(res.text).not.toMatch(/secret_hash|api_keys|ambiguous/);
    const logged = lines.filter((line) => line.msg === 'unhandled error');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ reqId: 'req-500', err: { message: bug.message, stack: expect.stringContaining('errors.test.ts') } });
  });
});
