import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lint } from '@redocly/openapi-core';
import { extractZodObjectShape, isAppRouteNoBody, isAppRouteOtherResponse, isZodObject } from '@ts-rest/core';
import type { MediaTypeObject, OpenAPIObject, ParameterObject, RequestBodyObject, SchemaObject } from 'openapi3-ts/oas30';
import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CONSISTENCY_HEADER,
  OAUTH_ERRORS,
  oauthServerOf,
  REGISTRATION_ERRORS,
  PROBLEM_CONTENT_TYPE,
  PROBLEMS,
  REVISION_HEADER,
  type KeyScope,
  type RouteMetadata,
} from '../../contract/index.ts';
import { OPENAPI_TYPES_FILE, renderClientTypes, renderOpenApiJson } from '../../scripts/generate-openapi.ts';
import { buildOpenApiDocument } from '../../scripts/openapi/document.ts';
import { codeSpans } from '../../scripts/openapi/markdown.ts';
import { openApiPathOf, operationIdOf } from '../../scripts/openapi/routes.ts';
import { schemasOf, untypedSchemas } from '../../scripts/openapi/schema-checks.ts';
import { missingScopeDetail } from '../../src/auth/scopes.ts';
import { DEFAULT_CHECK_BUDGET, overBudget } from '../../src/engine/budget.ts';
import { problemBody } from '../../src/http/problem.ts';
import { DOCUMENT_NAMESPACE, useApp } from '../helpers.ts';
import { everyContractRoute } from '../http/routes.ts';
import { dereferencedDocument, loadDocument, OPENAPI_FILE, operationsOf, SchemaValidator, type DocumentOperation } from './support.ts';

const routes = everyContractRoute().map(({ name, route }) => ({ keys: name.split('.'), route }));
const document = loadDocument();
const operations = operationsOf(document);
let resolved: OpenAPIObject;
let resolvedOperations: Map<string, DocumentOperation>;

beforeAll(async () => {
  resolved = await dereferencedDocument();
  resolvedOperations = new Map(operationsOf(resolved).map((o) => [o.operationId, o]));
});

describe('generated/openapi.json', () => {
  it('is what `npm run generate` makes of the current contract (run it after changing the contract)', () => {
    expect(readFileSync(OPENAPI_FILE, 'utf8')).toBe(renderOpenApiJson(buildOpenApiDocument()));
  });

  it('is deterministic', () => {
    expect(renderOpenApiJson(buildOpenApiDocument())).toBe(renderOpenApiJson(buildOpenApiDocument()));
  });

  it('has openapi-typescript types in generated/openapi-types.ts that match it', async () => {
    expect(readFileSync(OPENAPI_TYPES_FILE, 'utf8')).toBe(await renderClientTypes(loadDocument()));
  }, 60_000);

  it('validates with @apidevtools/swagger-parser', async () => {
    const api = (await SwaggerParser.validate(structuredClone(document) as never)) as unknown as OpenAPIObject;
    expect(api.openapi).toMatch(/^3\.0\.\d+$/);
  });

  it('passes the recommended-strict rules of Redocly (@redocly/openapi-core, through openapi-typescript)', async () => {
    const config = await createConfig({ extends: ['recommended-strict'] });
    // Redirects are these routes' success (RFC 6749 4.1), though the rule asks for a 2XX.
    const redirectOnly = routes
      .filter(({ route }) => Object.keys(route.responses).every((status) => !status.startsWith('2')))
      .map(({ route }) => `#/paths/${openApiPathOf(route).replaceAll('/', '~1')}/${route.method.toLowerCase()}/responses`);
    expect(redirectOnly).toHaveLength(2);
    const problems = (await lint({ ref: OPENAPI_FILE, config })).filter(
      (p) => !(p.ruleId === 'operation-2xx-response' && redirectOnly.includes(p.location[0]?.pointer ?? '')),
    );
    expect(problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('has a type (or a $ref or composition) on every schema, as linters such as @redocly/cli require', () => {
    expect(untypedSchemas(document)).toEqual([]);
  });

  it('holds exactly the contract routes, under their full paths', () => {
    const fromContract = routes.map(({ route }) => `${route.method.toLowerCase()} ${openApiPathOf(route)}`).sort();
    const fromDocument = operations.map((o) => `${o.method} ${o.path}`).sort();
    expect(fromDocument).toEqual(fromContract);
    expect(fromDocument.every((o) => o.split(' ')[1]!.startsWith('/v1/'))).toBe(true);
  });

  it('gives every operation a unique, readable operationId', () => {
    const ids = operations.map((o) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['check', 'checkBulk', 'objectsList', 'grantsList', 'grantsCreate', 'keysCreate']));
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z]*$/);
  });
});

describe.each(routes.map((r) => [operationIdOf(r.keys), r.route] as const))('operation %s', (operationId, route) => {
  const found = operations.find((o) => o.operationId === operationId);
  const op = () => {
    if (!found) throw new Error(`${operationId} is not in the document`);
    return found.operation;
  };
  const resolvedOp = () => resolvedOperations.get(operationId)!.operation;

  it('sits at the route path and method', () => {
    expect(found?.path).toBe(openApiPathOf(route));
    expect(found?.method).toBe(route.method.toLowerCase());
  });

  it('has a summary, a description, and a declared tag', () => {
    expect(op().summary).toBe(route.summary);
    expect(op().description ?? '').toContain(codeSpans(route.description ?? ''));
    expect(op().tags).toHaveLength(1);
    expect(document.tags?.map((t) => t.name)).toContain(op().tags![0]);
  });

  // An OAuth protocol route has no scope: its clients authenticate as RFC 6749 says.
  if (oauthServerOf(route)) {
    it('has no scope, says its errors are RFC 6749 bodies, and names declared security schemes', () => {
      expect(op()['x-required-scope']).toBeUndefined();
      expect(op().description).toContain('RFC 6749 `{error, error_description}`');
      expect(op().security).toBeInstanceOf(Array);
      const schemes = op().security!.flatMap((requirement) => Object.keys(requirement));
      expect(schemes.filter((scheme) => document.components!.securitySchemes![scheme] === undefined)).toEqual([]);
    });
  } else {
    it('has its scope, said in its description, and bearer security', () => {
      const { scope } = route.metadata as RouteMetadata;
      expect(op().description).toContain(`scope \`${scope}\``);
      expect(op()['x-required-scope']).toBe(scope);
      expect(op().security).toEqual([{ bearer: [] }]);
    });
  }

  it('documents every path and query parameter with its schema', () => {
    const parameters = (resolvedOp().parameters ?? []) as ParameterObject[];
    const expected = [
      ...(isZodObject(route.pathParams) ? Object.keys(extractZodObjectShape(route.pathParams)).map((name) => `path ${name}`) : []),
      ...(isZodObject(route.query) ? Object.keys(extractZodObjectShape(route.query)).map((name) => `query ${name}`) : []),
      // Reads take Grantd-Consistency (docs/consistency.md#revisions).
      ...((route.metadata as RouteMetadata | undefined)?.revisions === 'reads' ? [`header ${CONSISTENCY_HEADER}`] : []),
    ];
    expect(parameters.map((p) => `${p.in} ${p.name}`).sort()).toEqual(expected.sort());
    for (const p of parameters) {
      expect(p.description, `${p.in} ${p.name} has a description`).toBeTruthy();
      expect((p.schema as SchemaObject).type).toBeDefined();
    }
    expect(parameters.filter((p) => p.in === 'path' && p.required !== true)).toEqual([]);
  });

  if (route.method !== 'GET' && 'body' in route && !isAppRouteNoBody(route.body)) {
    it("has a required request body of the route's content type", () => {
      const body = resolvedOp().requestBody as RequestBodyObject;
      expect(body.required).toBe(true);
      const contentType = 'contentType' in route && route.contentType ? route.contentType : 'application/json';
      expect(Object.keys(body.content)).toEqual([contentType]);
      expect((body.content[contentType]!.schema as SchemaObject).type).toBe('object');
    });
  } else {
    it('has no request body', () => {
      expect(resolvedOp().requestBody).toBeUndefined();
    });
  }

  const responses = () => resolvedOp().responses as Record<string, { description: string; content?: Record<string, MediaTypeObject> }>;
  it('documents every response status of the route', () => {
    expect(Object.keys(responses()).sort()).toEqual(Object.keys(route.responses).sort());
  });

  for (const [status, declared] of Object.entries(route.responses)) {
    const response = () => responses()[status]!;
    // A write's successes, and only they, carry the revision that includes it.
    const carriesRevision = (route.metadata as RouteMetadata | undefined)?.revisions === 'writes' && status.startsWith('2');
    it(`describes its ${status} answer, ${carriesRevision ? 'with' : 'without'} the revision header`, () => {
      expect(response().description).toBeTruthy();
      const headers = Object.keys((response() as { headers?: Record<string, unknown> }).headers ?? {});
      expect(headers.includes(REVISION_HEADER)).toBe(carriesRevision);
    });

    if (isAppRouteOtherResponse(declared) && declared.contentType !== PROBLEM_CONTENT_TYPE) {
      // Only OAuth routes answer other than problems: RFC 6749 errors in JSON, or a page.
      const { contentType } = declared;
      const schema = () => {
        expect(oauthServerOf(route)).toBeDefined();
        expect(Object.keys(response().content ?? {})).toEqual([contentType]);
        return response().content![contentType]!.schema as SchemaObject;
      };
      if (contentType === 'application/json') {
        // Registration answers RFC 7591's errors (3.2.2), of the same shape.
        const codes = oauthServerOf(route) === 'registration' ? REGISTRATION_ERRORS : OAUTH_ERRORS;
        it(`answers ${status} with an RFC 6749 error of the codes grantd uses`, () => {
          expect((schema().properties!.error as SchemaObject).enum).toEqual([...codes]);
          expect(schema().required).toEqual(['error']);
        });
      } else {
        it(`answers ${status} with a page, as ${contentType}`, () => {
          expect(schema().type).toBe('string');
        });
      }
    } else if (isAppRouteOtherResponse(declared)) {
      it(`answers ${status} with the one Problem schema, its type narrowed to the route's problem types`, () => {
        expect(Object.keys(response().content ?? {})).toEqual(['application/problem+json']);
        const [problem, narrowing] = (response().content!['application/problem+json']!.schema as SchemaObject).allOf as SchemaObject[];
        expect(problem).toBe(resolved.components!.schemas!.Problem);
        const contractEnum = (declared.body as unknown as { shape: { type: { options: string[] } } }).shape.type.options;
        expect(narrowing).toEqual({ type: 'object', properties: { type: { type: 'string', enum: contractEnum } } });
        for (const type of contractEnum) expect(response().description).toContain(`\`${type}\``);
      });
    } else if (isAppRouteNoBody(declared)) {
      it(`answers ${status} with no body`, () => {
        expect(response().content).toBeUndefined();
      });
    } else {
      it(`answers ${status} with a JSON body of a typed schema`, () => {
        expect(Object.keys(response().content ?? {})).toEqual(['application/json']);
        expect((response().content!['application/json']!.schema as SchemaObject).type).toBeDefined();
      });
    }
  }
});

describe('schemas and examples', () => {
  it('names the resources under components/schemas and refers to them rather than copying them', () => {
    const schemas = document.components!.schemas!;
    for (const name of [
      'Grant',
      'Agent',
      'Namespace',
      'CreatedKey',
      'KeySummary',
      'Triple',
      'CheckRequest',
      'ObjectPage',
      'Problem',
      'ValidationIssue',
    ]) {
      expect(schemas[name], name).toBeDefined();
    }
    expect(Object.keys(schemas).filter((n) => /problem/i.test(n))).toEqual(['Problem']);
    expect(((schemas.Problem as SchemaObject).properties!.type as SchemaObject).enum).toEqual(Object.keys(PROBLEMS));
    expect((schemas.Problem as SchemaObject).required).toEqual(['type', 'title', 'status', 'detail']);
    const text = JSON.stringify(document);
    for (const name of [
      'Grant',
      'Agent',
      'Namespace',
      'CreatedKey',
      'KeySummary',
      'Triple',
      'CheckRequest',
      'ObjectPage',
      'ValidationIssue',
      'KeyScope',
    ]) {
      expect(text, `${name} is referenced`).toContain(`"#/components/schemas/${name}"`);
    }
    // No inline schema anywhere is a copy of a named one.
    const named = new Map(Object.entries(schemas).map(([n, s]) => [JSON.stringify(s), n]));
    for (const [at, schema] of schemasOf(document)) {
      if (at.startsWith(`#/components/schemas/`) && at.split('/').length === 4) continue;
      expect(named.get(JSON.stringify(schema)), `${at} copies a component`).toBeUndefined();
    }
    expect(document.components!.responses!.Unauthenticated).toBeDefined();
    expect(document.components!.securitySchemes!.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('keeps the contract patterns and bounds', () => {
    const objects = resolvedOperations.get('objectsList')!.operation;
    const param = (name: string) => (objects.parameters as ParameterObject[]).find((p) => p.name === name)!;
    expect(param('limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 100 });
    expect(param('limit').required).toBeFalsy();
    expect(param('namespace')).toMatchObject({ required: true, schema: { pattern: '^[a-z][a-z0-9_]{0,62}$' } });
    // A subject may be `<namespace>:*` (docs/model.md#public-grants); an object never.
    expect(param('subject').schema).toMatchObject({ pattern: '^[a-z][a-z0-9_]{0,62}:([A-Za-z0-9._\\-@|~+=]{1,256}|\\*)$' });
    const subjects = resolvedOperations.get('subjectsList')!.operation;
    expect((subjects.parameters as ParameterObject[]).find((p) => p.name === 'object')!.schema).toMatchObject({
      pattern: '^[a-z][a-z0-9_]{0,62}:[A-Za-z0-9._\\-@|~+=]{1,256}$',
    });
    // Any string: one the server did not issue is answered with invalid-cursor, not refused by the schema.
    expect(param('cursor').schema).toEqual({ type: 'string' });
    const agent = resolvedOperations.get('agentsGet')!.operation;
    // The server refuses `.` and `..` besides; the document's pattern is the portable part of the check.
    expect((agent.parameters as ParameterObject[])[0]).toMatchObject({
      name: 'external_id',
      in: 'path',
      schema: { pattern: '^[A-Za-z0-9._\\-@|~+=]{1,256}$', description: 'Not `.` or `..`.' },
    });
    const schemas = document.components!.schemas! as Record<string, SchemaObject>;
    expect(schemas.BulkCheckRequest!.properties!.checks).toMatchObject({ minItems: 1, maxItems: 1000 });
    expect(schemas.CreateKeyRequest!.properties!.scopes).toMatchObject({ minItems: 1, maxItems: 4, default: ['check:read'] });
    expect(schemas.KeyScope).toEqual({ type: 'string', enum: ['check:read', 'grant:read', 'grant:write', 'admin'] });
    expect(schemas.Namespace!.properties!.relations).toMatchObject({ type: 'object', nullable: true });
  });

  it('has patterns that ECMA-262, Perl and RE2 accept alike: no lookaround, no \\u escapes, no backreferences', () => {
    const patterns = [...schemasOf(document)].flatMap(([, s]) => ('pattern' in s && s.pattern !== undefined ? [s.pattern] : []));
    expect(patterns.length).toBeGreaterThan(10);
    for (const pattern of patterns) {
      expect(pattern).not.toMatch(/\(\?<?[=!]|\\[upPk]|\\[1-9]/);
      expect(() => new RegExp(pattern, 'u'), pattern).not.toThrow();
    }
  });

  it("names each operation's scope in its 403 example, as the server's answer does", () => {
    let checked = 0;
    for (const { operationId, operation } of resolvedOperations.values()) {
      const scope = (operation as { 'x-required-scope'?: KeyScope })['x-required-scope'];
      if (!scope) continue;
      const forbidden = (operation.responses['403'] as { content: Record<string, MediaTypeObject> }).content['application/problem+json']!;
      const example = forbidden.examples!['insufficient-scope'] as { value: unknown };
      expect(example.value, operationId).toEqual(problemBody('insufficient-scope', missingScopeDetail(scope)));
      checked++;
    }
    expect(checked).toBeGreaterThan(15);
  });

  it('carries the examples of docs/api.md and docs/model.md', () => {
    const media = (id: string, status?: number) => {
      const op = resolvedOperations.get(id)!.operation;
      return status === undefined
        ? (op.requestBody as RequestBodyObject).content['application/json']!
        : (op.responses[String(status)] as { content: Record<string, MediaTypeObject> }).content['application/json']!;
    };
    expect(media('namespacesCreate').examples!.document).toMatchObject({ value: DOCUMENT_NAMESPACE });
    expect(media('check').example).toEqual({ subject: 'user:alice', relation: 'viewer', object: 'document:q3' });
    expect(media('check', 200).example).toEqual({ allowed: true });
    expect(media('objectsList', 200).examples!.more).toMatchObject({ value: { namespace: 'document', next_cursor: expect.any(String) } });
    expect(media('keysCreate', 201).example).toMatchObject({
      id: expect.stringMatching(/^key_/),
      secret: expect.stringMatching(/^svc_live_[A-Za-z0-9]{40,}$/),
    });
  });

  it('words the problems of a check over its budget and of a rate limit as the server does', () => {
    const problem = (id: string, status: number, type: string) =>
      (resolvedOperations.get(id)!.operation.responses[String(status)] as { content: Record<string, MediaTypeObject> }).content[
        'application/problem+json'
      ]!.examples![type] as { value: unknown };
    expect(problem('check', 422, 'check-too-complex').value).toEqual(problemBody('check-too-complex', overBudget(DEFAULT_CHECK_BUDGET).detail));
    const tooMany = resolvedOperations.get('check')!.operation.responses['429'] as { description: string };
    expect(tooMany.description).toContain('GRANTD_RATE_LIMIT');
    expect(tooMany.description).toContain('failed authentications a second (GRANTD_AUTH_FAILURE_LIMIT)');
  });

  it('has examples that conform to their schemas', () => {
    const validator = new SchemaValidator();
    const checked: string[] = [];
    const check = (at: string, media: MediaTypeObject) => {
      const values = media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}).map((e) => (e as { value: unknown }).value);
      for (const value of values) {
        expect(validator.errors(media.schema as SchemaObject, value, true), at).toEqual([]);
        checked.push(at);
      }
    };
    for (const { operationId, operation } of operationsOf(resolved)) {
      for (const [type, media] of Object.entries((operation.requestBody as RequestBodyObject | undefined)?.content ?? {}))
        check(`${operationId} request ${type}`, media);
      for (const [status, response] of Object.entries(operation.responses)) {
        for (const [type, media] of Object.entries((response as { content?: Record<string, MediaTypeObject> }).content ?? {})) {
          check(`${operationId} ${status} ${type}`, media);
        }
      }
    }
    expect(checked.length).toBeGreaterThan(100);
  });
});

describe('GET /openapi.json', () => {
  const { app } = useApp();
  it('serves the committed document, unauthenticated', async () => {
    const res = await supertest(app).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual(document);
  });
});
