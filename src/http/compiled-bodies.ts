import { Ajv, type ValidateFunction } from 'ajv';
import type { AppRoute } from '@ts-rest/core';
import type { ZodType } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';

/**
 * A route whose body schema first asks the same schema compiled by Ajv (its JSON Schema, as
 * zod-to-json-schema derives it and the MCP tools publish it) whether it accepts the body: a body it
 * accepts is taken as it is; any other goes to zod, which decides and names the problems. zod's parse
 * of a bulk of 100 checks took 130-220 us of CPU, the compiled schema 16-31 (bench/bulk-engine.ts;
 * docs/decisions.md#a-checks-and-a-bulks-bodies-are-checked-by-their-schemas-compiled). The rules are the contract's
 * alone: there is no second definition, and test/http/compiled-bodies.test.ts checks that both accept
 * and refuse the same bodies with the same data. Only for a body schema of plain objects, arrays and
 * patterned strings, whose output is its input (no defaults, transforms or coercion): that is all the
 * compiled schema is asked to agree on.
 */
export function withCompiledBody<R extends AppRoute & { body: ZodType }>(route: R): R {
  const schema = route.body;
  const accepts = compiled(schema);
  const body = Object.create(schema) as typeof schema;
  body.safeParse = (data, params) => (accepts(data) ? { success: true, data: data as never } : schema.safeParse(data, params));
  return { ...route, body };
}

/** The schema's JSON Schema compiled; patterns as zod runs them (no `u` flag), and no coercion or defaults. */
function compiled(schema: ZodType): ValidateFunction {
  const { $schema: _, ...json } = zodToJsonSchema(schema, { $refStrategy: 'none' });
  return new Ajv({ unicodeRegExp: false, coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false }).compile(json);
}
