import type { AppRoute } from '@ts-rest/core';
import { generateOpenApi } from '@ts-rest/open-api';
import type { OpenAPIObject, ReferenceObject, RequestBodyObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas30';
import { KEY_SCOPES } from '../../contract/index.ts';
import { canonical, type Json, type Schema } from './json.ts';
import { NAMED_SCHEMAS, type NamedSchema } from './named-schemas.ts';

/*
 * components/schemas: the contract's named schemas, rendered as @ts-rest/open-api renders them, and
 * the $refs to them that replace every identical schema in the document.
 */

export const schemaRef = (name: string): ReferenceObject => ({ $ref: `#/components/schemas/${name}` });

/** The named schemas, and how to refer to them wherever the document holds one. */
export class NamedSchemas {
  /** Each named schema as rendered, in NAMED_SCHEMAS's order. */
  readonly rendered = renderSchemas(NAMED_SCHEMAS);
  private readonly nameBySchema = new Map<string, string>();

  constructor() {
    for (const [name, schema] of this.rendered) {
      const key = canonical(schema);
      const other = this.nameBySchema.get(key);
      if (other) throw new Error(`schemas ${other} and ${name} render identically; name one of them only`);
      this.nameBySchema.set(key, name);
    }
  }

  /** The schema with every named schema inside it (not itself) replaced by a $ref. */
  useComponents(schema: Schema): Schema {
    return mapSchema(schema, (s, isRoot) => {
      const name = isRoot ? undefined : this.nameBySchema.get(canonical(s));
      return name ? schemaRef(name) : undefined;
    });
  }

  /** A $ref when the schema is a named one, else the schema with the named ones inside it as $refs. */
  asComponent(schema: Schema): Schema {
    const name = this.nameBySchema.get(canonical(schema));
    return name ? schemaRef(name) : this.useComponents(schema);
  }
}

/** components/schemas: the named schemas, then the problem schemas by name, with refinements. */
export function componentSchemas(named: NamedSchemas, problemSchemas: Iterable<[string, SchemaObject]>): Record<string, Schema> {
  const schemas: Record<string, Schema> = {};
  for (const [name, schema] of named.rendered) schemas[name] = named.useComponents(schema);
  for (const [name, schema] of problemSchemas) schemas[name] = named.useComponents(schema);
  refineSchemas(schemas);
  return schemas;
}

/** Renders zod schemas exactly as @ts-rest/open-api renders route bodies (input) and responses (output). */
function renderSchemas(entries: readonly NamedSchema[]): Map<string, SchemaObject> {
  const routes = Object.fromEntries(
    entries.map(({ name, schema }) => [name, { method: 'POST', path: `/${name}`, body: schema, responses: { 200: schema } } as unknown as AppRoute]),
  );
  const rendered = generateOpenApi(routes, { info: { title: '', version: '' } }) as unknown as OpenAPIObject;
  const result = new Map<string, SchemaObject>();
  for (const { name, output } of entries) {
    const operation = rendered.paths[`/${name}`]!.post!;
    const media = output
      ? (operation.responses['200'] as ResponseObject).content!['application/json']!
      : (operation.requestBody as RequestBodyObject).content['application/json']!;
    result.set(name, media.schema as SchemaObject);
  }
  return result;
}

/** Visits every schema position (not following $refs) and lets `replace` swap a schema for another. */
function mapSchema(schema: Schema, replace: (s: Schema, isRoot: boolean) => Schema | undefined, isRoot = true): Schema {
  const replaced = replace(schema, isRoot);
  if (replaced) return replaced;
  if ('$ref' in schema) return schema;
  const s: SchemaObject = { ...schema };
  const sub = (x: Schema) => mapSchema(x, replace, false);
  if (s.properties) s.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, sub(v)]));
  if (s.items) s.items = sub(s.items);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') s.additionalProperties = sub(s.additionalProperties);
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) if (s[key]) s[key] = s[key].map(sub);
  if (s.not) s.not = sub(s.not);
  return s;
}

/** What zod refinements say but @ts-rest/open-api cannot render. */
function refineSchemas(schemas: Record<string, Schema>): void {
  const object = (name: string): SchemaObject => {
    const s = schemas[name];
    if (!s || '$ref' in s) throw new Error(`no component schema ${name}`);
    return s;
  };
  const property = (name: string, prop: string): SchemaObject => {
    const s = object(name).properties?.[prop];
    if (!s || '$ref' in s) throw new Error(`no property ${name}.${prop}`);
    return s;
  };
  // BatchRequestSchema: 1 to 1000 triples in writes and deletes together.
  const batch = object('GrantBatchRequest');
  batch.description = 'Grants to write and grants to delete: 1 to 1000 triples in all, applied all or nothing.';
  for (const list of ['writes', 'deletes']) property('GrantBatchRequest', list).maxItems = 1000;
  // RelationsSchema: at most 128 relations, each named like a namespace.
  const relations = property('CreateNamespaceRequest', 'relations');
  relations.maxProperties = 128;
  relations.description = `${relations.description}. At most 128 relations, each named ^[a-z][a-z0-9_]{0,62}$.`;
  // KEY_SCOPES is the list the KeyScope enum renders.
  if (canonical((object('KeyScope').enum ?? []) as Json) !== canonical([...KEY_SCOPES])) throw new Error('KeyScope does not render KEY_SCOPES');
}
