import type { ReferenceObject, SchemaObject } from 'openapi3-ts/oas30';

/** A schema position of the document: a schema, or a $ref to a named one. */
export type Schema = SchemaObject | ReferenceObject;
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Canonical JSON (sorted keys), to compare schemas structurally. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
