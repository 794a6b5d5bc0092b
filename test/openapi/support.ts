import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { OpenAPIObject, OperationObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas30';
import { packageRoot } from '../../src/package-root.ts';

export const OPENAPI_FILE = join(packageRoot(), 'generated', 'openapi.json');

/** generated/openapi.json, the committed document the server serves. */
export const loadDocument = (): OpenAPIObject => JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as OpenAPIObject;

/** The document with every $ref replaced by what it points to. */
export const dereferencedDocument = async (): Promise<OpenAPIObject> =>
  (await SwaggerParser.dereference(structuredClone(loadDocument()) as never)) as unknown as OpenAPIObject;

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;

export interface DocumentOperation {
  operationId: string;
  method: string;
  path: string;
  operation: OperationObject;
}

export function operationsOf(document: OpenAPIObject): DocumentOperation[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = (item as Record<string, OperationObject | undefined>)[method];
      return operation ? [{ operationId: String(operation.operationId), method, path, operation }] : [];
    }),
  );
}

/** OpenAPI 3.0 keywords that JSON Schema does not have (nullable is translated). */
const OPENAPI_ONLY = new Set(['nullable', 'example', 'xml', 'externalDocs', 'discriminator']);

/**
 * An OpenAPI 3.0 schema (dereferenced) as JSON Schema for ajv: `nullable: true` becomes a `null`
 * type (or an anyOf with null), OpenAPI-only keywords go. With `closed`, objects that list their
 * properties and say nothing of others admit no others, so that a response growing an undocumented
 * field fails.
 */
export function toJsonSchema(schema: SchemaObject, closed: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (OPENAPI_ONLY.has(key) || key.startsWith('x-')) continue;
    out[key] = value;
  }
  const sub = (s: SchemaObject) => toJsonSchema(s, closed);
  if (schema.properties) out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, sub(v as SchemaObject)]));
  if (schema.items) out.items = sub(schema.items as SchemaObject);
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    out.additionalProperties = sub(schema.additionalProperties as SchemaObject);
  }
  for (const key of ['anyOf', 'oneOf'] as const) if (schema[key]) out[key] = (schema[key] as SchemaObject[]).map(sub);
  // A part of an allOf describes some of the properties only: closing it would refuse the others'.
  if (schema.allOf) out.allOf = (schema.allOf as SchemaObject[]).map((s) => toJsonSchema(s, false));
  if (schema.not) out.not = sub(schema.not as SchemaObject);
  if (closed && schema.type === 'object' && schema.properties && schema.additionalProperties === undefined && !schema.allOf) {
    out.additionalProperties = false;
  }
  if (schema.nullable) {
    if (typeof schema.type === 'string') {
      out.type = [schema.type, 'null'];
      if (Array.isArray(out.enum)) out.enum = [...(out.enum as unknown[]), null];
    } else {
      return { anyOf: [out, { type: 'null' }] };
    }
  }
  return out;
}

/** Validates values against OpenAPI schemas of a dereferenced document; compiles each schema once. */
export class SchemaValidator {
  private readonly ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  private readonly compiled = new Map<boolean, WeakMap<object, ValidateFunction>>([
    [true, new WeakMap()],
    [false, new WeakMap()],
  ]);

  constructor() {
    addFormatsModule.default(this.ajv);
  }

  /** The errors of `value` against `schema`, as readable lines; empty when it conforms. */
  errors(schema: SchemaObject, value: unknown, closed = false): string[] {
    const cache = this.compiled.get(closed)!;
    let validate = cache.get(schema);
    if (!validate) {
      validate = this.ajv.compile(toJsonSchema(schema, closed));
      cache.set(schema, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
  }
}

export const responseOf = (operation: OperationObject, status: number): ResponseObject | undefined =>
  operation.responses[String(status)] as ResponseObject | undefined;
