import type { OpenAPIObject, OperationObject, ParameterObject, RequestBodyObject, ResponseObject } from 'openapi3-ts/oas30';
import type { Schema } from './json.ts';

/** Every schema of the document, with a JSON-pointer-ish location, for checks. */
export function* schemasOf(document: OpenAPIObject): Generator<[string, Schema]> {
  function* walk(schema: Schema, at: string): Generator<[string, Schema]> {
    yield [at, schema];
    if ('$ref' in schema) return;
    for (const [k, v] of Object.entries(schema.properties ?? {})) yield* walk(v, `${at}/properties/${k}`);
    if (schema.items) yield* walk(schema.items, `${at}/items`);
    if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
      yield* walk(schema.additionalProperties, `${at}/additionalProperties`);
    }
    for (const key of ['allOf', 'anyOf', 'oneOf'] as const) for (const [i, v] of (schema[key] ?? []).entries()) yield* walk(v, `${at}/${key}/${i}`);
    if (schema.not) yield* walk(schema.not, `${at}/not`);
  }
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) yield* walk(schema, `#/components/schemas/${name}`);
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(item) as [string, OperationObject][]) {
      const at = `#/paths/${path}/${method}`;
      for (const p of (op.parameters ?? []) as ParameterObject[]) if (p.schema) yield* walk(p.schema, `${at}/parameters/${p.name}`);
      for (const [type, media] of Object.entries((op.requestBody as RequestBodyObject | undefined)?.content ?? {})) {
        if (media.schema) yield* walk(media.schema, `${at}/requestBody/${type}`);
      }
      for (const [status, response] of Object.entries(op.responses) as [string, ResponseObject][]) {
        for (const [type, media] of Object.entries(response.content ?? {}))
          if (media.schema) yield* walk(media.schema, `${at}/responses/${status}/${type}`);
      }
    }
  }
  for (const [name, response] of Object.entries(document.components?.responses ?? {}) as [string, ResponseObject][]) {
    for (const [type, media] of Object.entries(response.content ?? {}))
      if (media.schema) yield* walk(media.schema, `#/components/responses/${name}/${type}`);
  }
}

/**
 * Schema nodes without `type` (nor $ref or a composition): @ts-rest/open-api renders `z.unknown()` and
 * `z.any()` as `{nullable: true}` or `{}`, which linters such as @redocly/cli reject.
 */
export function untypedSchemas(document: OpenAPIObject): string[] {
  const bad: string[] = [];
  for (const [at, schema] of schemasOf(document)) {
    if (!('$ref' in schema) && schema.type === undefined && !schema.allOf && !schema.anyOf && !schema.oneOf) bad.push(at);
  }
  return bad;
}
