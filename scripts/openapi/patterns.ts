import type { OpenAPIObject } from 'openapi3-ts/oas30';
import { ID_PATTERN, PATH_ID_PATTERN, TEXT_PATTERN } from '../../contract/index.ts';
import { schemasOf } from './schema-checks.ts';

/*
 * The document's patterns in the subset of regular expressions that ECMA-262 (what JSON Schema
 * names), Perl and RE2 all accept, so that generators in any language take them: no lookaround, no
 * `\u` escapes, no backreferences. The server keeps checking the contract's strict pattern; where it
 * cannot be written portably, the document shows a portable pattern it implies and says the rest.
 */

const PORTABLE = new Map<string, { pattern: string; besides: string }>([
  [PATH_ID_PATTERN.source, { pattern: ID_PATTERN.source, besides: 'Not `.` or `..`.' }],
  // \x00 is the NUL character in all three; a lone surrogate has no portable spelling at all.
  [TEXT_PATTERN.source, { pattern: '^[^\\x00]*$', besides: 'Without U+0000 or unpaired surrogates.' }],
]);

/** Lookahead and lookbehind, `\u`/`\p`/`\k` escapes, backreferences. */
const UNPORTABLE = /\(\?<?[=!]|\\[upPk]|\\[1-9]/;

/** Replaces each strict pattern of the document by its portable form; throws on a pattern that has none. */
export function portablePatterns(document: OpenAPIObject): void {
  for (const [at, schema] of schemasOf(document)) {
    if ('$ref' in schema || schema.pattern === undefined) continue;
    const portable = PORTABLE.get(schema.pattern);
    if (portable) {
      schema.pattern = portable.pattern;
      schema.description = schema.description ? `${schema.description.replace(/\.?$/, '.')} ${portable.besides}` : portable.besides;
    }
    if (UNPORTABLE.test(schema.pattern)) throw new Error(`${at}: the pattern ${schema.pattern} is not portable (ECMA-262, Perl and RE2)`);
  }
}
