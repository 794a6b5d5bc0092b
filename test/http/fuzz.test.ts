import fc from 'fast-check';
import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { PROBLEMS } from '../../contract/index.ts';
import { client, DOCUMENT_NAMESPACE, newTenant, tenantSnapshot, useApp, type TestTenant } from '../helpers.ts';
import { assertProperty } from '../properties.ts';
import { contractRoutes, expectDocumentedResponse, fillPath } from './routes.ts';

/**
 * Hostile input on every route: never a 5xx, every 4xx a problem of a documented type, and a
 * rejected request changes nothing.
 */
const { services, app } = useApp();
let tenant: TestTenant;

beforeAll(async () => {
  tenant = await newTenant(services);
  const api = client(app, tenant.adminKey);
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
  await api.post('/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'document:q3' }).expect(201);
});

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '',
    'user:',
    ':x',
    'user:alice',
    'document:q3',
    'agent:bot',
    '__proto__',
    'constructor',
    'user:\u0000',
    'a\u0000b',
    '\ud800',
    'x\udc00y',
    'ü:ß',
    '1e400',
    '-0',
  ),
  fc.constant('x'.repeat(70_000)),
);
const leaf = fc.oneof(nasty, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const deep = fc.integer({ min: 50, max: 3000 }).map((depth) => {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
});
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: leaf },
  { weight: 2, arbitrary: fc.array(leaf, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(nasty, leaf, { maxKeys: 4 }) },
  { weight: 1, arbitrary: deep },
);
const FIELDS = [
  'subject',
  'relation',
  'object',
  'name',
  'relations',
  'checks',
  'writes',
  'deletes',
  'external_id',
  'scope',
  'owner',
  'label',
  'scopes',
  'display_name',
  '__proto__',
];
const body = fc.oneof(
  value,
  fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 6 }),
  fc.constantFrom('{"__proto__": {"polluted": true}}', '{"constructor": {"prototype": {"polluted": true}}}', '{"subject": ', '\u0000', 'null'),
);
// URLs stay under Node's 16 KiB header limit: beyond it the server answers before any route runs (test/http/server.test.ts).
const short = nasty.map((s) => s.slice(0, 1500));
const query = fc.dictionary(
  fc.constantFrom('namespace', 'subject', 'relation', 'object', 'cursor', 'limit', '__proto__', 'x'),
  fc.oneof(short, fc.array(short, { maxLength: 3 })),
  { maxKeys: 5 },
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/problem+json',
  'multipart/form-data; boundary=x',
  '',
);

describe.each(contractRoutes())('fuzzing $name', ({ route }) => {
  it('never answers 5xx, answers every 4xx with a documented problem, and changes nothing when it refuses', async () => {
    await assertProperty(
      fc.asyncProperty(body, query, fc.string({ maxLength: 300 }), contentType, async (payload, params, pathParam, type) => {
        const path = fillPath(route, { external_id: pathParam || 'x', id: pathParam || 'x' });
        const search = new URLSearchParams();
        for (const [k, v] of Object.entries(params)) for (const item of [v].flat()) search.append(k, item);
        const url = `${path}${search.size > 0 ? `?${search}` : ''}`;
        const before = await tenantSnapshot(services, tenant.id);
        let request = supertest(app)[route.method.toLowerCase() as 'post'](url).set('Authorization', `Bearer ${tenant.adminKey}`);
        if (route.method !== 'GET') {
          if (type) request = request.set('Content-Type', type);
          request = request.send(typeof payload === 'string' ? payload : JSON.stringify(payload));
        }
        const res = await request;
        expect(res.status, `${route.method} ${url.slice(0, 200)}`).toBeLessThan(500);
        expectDocumentedResponse(route, res, `${route.method} ${url.slice(0, 200)}`);
        // A refusal is a problem of a documented type and its own status, and changes nothing; an answer below 400 is none.
        const refused = res.status >= 400;
        const refusal = refused && {
          problemJson: (res.headers['content-type'] ?? '').startsWith('application/problem+json'),
          documentedType: Object.hasOwn(PROBLEMS, res.body.type),
          status: res.body.status,
          tenant: await tenantSnapshot(services, tenant.id),
        };
        expect(refusal).toEqual(refused && { problemJson: true, documentedType: true, status: res.status, tenant: before });
        expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
