import type { MediaTypeObject, OpenAPIObject, ParameterObject, RequestBodyObject, SchemaObject, SecurityRequirementObject } from 'openapi3-ts/oas30';
import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { BEARER_SCHEME } from '../../scripts/openapi/operations.ts';
import { newTenant, useApp, type TestTenant } from '../helpers.ts';
import { dereferencedDocument, loadDocument, operationsOf, type DocumentOperation } from './support.ts';

/*
 * /docs' "Try it out", as a newcomer uses it: authorize with the tenant's admin key, open an
 * operation, press Execute without typing anything. For every operation of generated/openapi.json
 * the test builds the request Swagger UI would send from what it pre-fills, and sends it to the
 * app. What Swagger UI pre-fills (swagger-ui 5, ParameterRow.setDefaultValue and RequestBody):
 * - a parameter: its `example`, else its schema's `example`, else its schema's `default`; an empty
 *   optional parameter is not sent, an empty required one stops Execute;
 * - a JSON body: the media type's `example`, or the value of its first `examples`;
 * - a form body: each property's sample from its schema alone (example, default, first enum value,
 *   else "string"): Swagger UI ignores the media type's example for forms.
 * A pre-filled value must never be refused as invalid: no answer is 400. The tenant is new, as a
 * newcomer's is, and the operations run in the document's order, so an example may name something
 * that does not exist (yet): a 404 that names a missing thing (`namespace-not-found`, ...) is the
 * right answer to a valid request then, as long as the operation documents it; a 404 `not-found`
 * (no route) is not. A form operation that authenticates an OAuth client (token, revoke) answers
 * 401: no example can hold a client's secret, and the admin key is not a client's credential.
 */

/** The sample Swagger UI makes up for a schema with no example; fails where it would guess from a pattern or bounds. */
function sample(schema: SchemaObject, where: string): unknown {
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case 'object':
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([name, property]) => [name, sample(property as SchemaObject, `${where}.${name}`)]),
      );
    case 'array':
      return [sample(schema.items as SchemaObject, `${where}[]`)];
    case 'string':
      // Swagger UI makes a string up from a pattern or a format: give the schema an example instead.
      expect(schema.pattern ?? schema.format, `${where}: Swagger UI would make a value up from its pattern or format`).toBeUndefined();
      return 'string';
    case 'boolean':
      return true;
    default:
      expect.fail(`${where}: give it an example (Swagger UI would make up a ${String(schema.type)})`);
  }
}

/** A value as Swagger UI puts it in a field: JSON but for strings. */
const fieldText = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

/** The value Swagger UI fills a parameter with, or undefined. */
const prefilled = (p: ParameterObject): unknown => p.example ?? (p.schema as SchemaObject).example ?? (p.schema as SchemaObject).default;

interface Prefilled {
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: { contentType: string; value: unknown };
  /** Required parameters Swagger UI leaves empty, which stop Execute. */
  missing: string[];
}

function prefill(document: OpenAPIObject, { path, operation }: DocumentOperation): Prefilled {
  const request: Prefilled = { path, query: {}, headers: {}, missing: [] };
  for (const p of (operation.parameters ?? []) as ParameterObject[]) {
    const value = prefilled(p);
    if (value === undefined) {
      if (p.required) request.missing.push(`${p.in} ${p.name}`);
      continue;
    }
    if (p.in === 'path') request.path = request.path.replace(`{${p.name}}`, encodeURIComponent(fieldText(value)));
    else if (p.in === 'query') request.query[p.name] = fieldText(value);
    else if (p.in === 'header') request.headers[p.name] = fieldText(value);
  }
  const body = operation.requestBody as RequestBodyObject | undefined;
  if (body) {
    const [[contentType, media]] = Object.entries(body.content) as [[string, MediaTypeObject]];
    const where = `${operation.operationId} body`;
    const first = Object.values(media.examples ?? {})[0];
    const named = first && 'value' in first ? (first.value as unknown) : undefined;
    const value =
      contentType === 'application/json'
        ? (media.example ?? named ?? sample(media.schema as SchemaObject, where))
        : sample(media.schema as SchemaObject, where);
    request.body = { contentType, value };
  }
  if (bearerIn(operation.security ?? document.security ?? [])) request.headers.Authorization = `Bearer ${tenant.adminKey}`;
  return request;
}

/** Whether Swagger UI, authorized with the bearer scheme only, sends the key to an operation of this security. */
const bearerIn = (security: SecurityRequirementObject[]): boolean => security.some((requirement) => BEARER_SCHEME in requirement);

async function execute(request: Prefilled, method: string): Promise<supertest.Response> {
  let test = supertest(app)[method as 'get'](request.path).query(request.query);
  for (const [name, value] of Object.entries(request.headers)) test = test.set(name, value);
  if (!request.body) return test;
  return request.body.contentType === 'application/json'
    ? test.send(request.body.value as object)
    : test.type('form').send(request.body.value as object);
}

const { services, app } = useApp();
let tenant: TestTenant;
let document: OpenAPIObject;

beforeAll(async () => {
  tenant = await newTenant(services);
  document = await dereferencedDocument();
});

/** The operations in the document's order, as a newcomer scrolling down /docs tries them. */
const operations = operationsOf(loadDocument()).map((o) => ({ ...o, security: o.operation.security ?? loadDocument().security ?? [] }));
const named = (list: typeof operations) => list.map((o) => [`${o.method.toUpperCase()} ${o.path}`, o.operationId] as const);
const dereferenced = (operationId: string) => operationsOf(document).find((o) => o.operationId === operationId)!;

/**
 * A step of an OAuth authorization in a browser (docs/oauth.md), which takes no credentials: its
 * values (the client's own, or the id of a live authorization request) cannot be examples. Every
 * other operation, open ones such as registration included, is executed.
 */
const isBrowserStep = (o: (typeof operations)[number]) => o.security.length === 0 && /^\/v1\/oauth\/(authorize|consent)\b/.test(o.path);

describe('Try it out with what /docs pre-fills', () => {
  it.each(named(operations.filter((o) => !isBrowserStep(o))))('%s (%s)', async (_, operationId) => {
    const operation = dereferenced(operationId);
    const security = operation.operation.security ?? document.security ?? [];
    const request = prefill(document, operation);
    expect(request.missing, `${operationId}: Swagger UI would not execute it without these`).toEqual([]);
    const res = await execute(request, operation.method);
    const answer = `${operationId} answered ${res.status} ${res.text.slice(0, 300)} to ${JSON.stringify(request)}`;
    expect(res.status, answer).not.toBe(400);
    expect(res.status, answer).toBeLessThan(500);
    expect(operation.operation.responses[String(res.status)], `${answer}: a status the operation does not document`).toBeDefined();
    expect(res.status === 404 && !/.-not-found$/.test(String(res.body.type)), `${answer}: no route`).toBe(false);
    expect((res.status === 401 || res.status === 403) && bearerIn(security), `${answer}: the admin key was refused`).toBe(false);
  });

  // Swagger UI asks for a browser step's values rather than send made-up ones.
  it.each(named(operations.filter(isBrowserStep)))('%s (%s) asks for its values', (_, operationId) => {
    expect(prefill(document, dereferenced(operationId)).missing).not.toEqual([]);
  });
});
