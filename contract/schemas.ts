import { z } from 'zod';

// Shapes shared by several resources (docs/api.md#names-and-identifiers).
const NAME_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;
export const ID_PATTERN = /^[A-Za-z0-9._\-@|~+=]{1,256}$/;
export const REF_PATTERN = /^[a-z][a-z0-9_]{0,62}:[A-Za-z0-9._\-@|~+=]{1,256}$/;
/** A subject is also `<namespace>:*`, every subject of the namespace (docs/model.md#public-grants); an object never. */
export const SUBJECT_PATTERN = /^[a-z][a-z0-9_]{0,62}:([A-Za-z0-9._\-@|~+=]{1,256}|\*)$/;
/** The id of a public grant's subject: every subject of its namespace. */
export const EVERY_SUBJECT_ID = '*';

export const NameSchema = z.string().regex(NAME_PATTERN, 'must match ^[a-z][a-z0-9_]{0,62}$');
/** An id that is also a URL path segment (an agent's): `.` and `..` would be normalised away by clients and proxies. */
export const PATH_ID_PATTERN = /^(?!\.{1,2}$)[A-Za-z0-9._\-@|~+=]{1,256}$/;
export const PathIdSchema = z.string().regex(PATH_ID_PATTERN, 'must be 1-256 characters of A-Z a-z 0-9 . _ - @ | ~ + =, and not . or ..');

const refMessage = 'must be <namespace>:<id>, e.g. user:alice';
const NAME_RULE = 'names are a lower-case letter, then up to 62 of a-z 0-9 _';
const ID_RULE = 'ids are 1-256 characters of A-Z a-z 0-9 . _ - @ | ~ + =';
const ID_CHARACTER = /[A-Za-z0-9._\-@|~+=]/u;

/** The first character of `text` that `allowed` refuses, named with its code point (a space or a control character is invisible). */
function firstRefused(text: string, allowed: RegExp): string | undefined {
  const refused = [...text].find((ch) => !allowed.test(ch));
  return refused === undefined ? undefined : `${JSON.stringify(refused)} (U+${refused.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')})`;
}

/** What is wrong with a name (a namespace's or a relation's), and the rule; undefined for a good one. */
export function explainName(name: string): string | undefined {
  if (NAME_PATTERN.test(name)) return undefined;
  if (name === '') return `it is empty: ${NAME_RULE}`;
  if (NAME_PATTERN.test(name.toLowerCase()))
    return `${JSON.stringify(name)} has upper-case letters; write ${JSON.stringify(name.toLowerCase())}: ${NAME_RULE}`;
  if (!/^[a-z]/.test(name)) return `${JSON.stringify(name)} does not start with a lower-case letter: ${NAME_RULE}`;
  if (name.length > 63) return `${JSON.stringify(name.slice(0, 70))}... is ${name.length} characters long: ${NAME_RULE}`;
  return `${JSON.stringify(name)} holds ${firstRefused(name, /[a-z0-9_]/)}: ${NAME_RULE}`;
}

/**
 * What is wrong with a subject or object, and the rule it breaks, for a problem's message: an
 * upper-case namespace, a missing colon, a refused character; undefined for a good one.
 */
export function explainRef(value: string): string | undefined {
  if (REF_PATTERN.test(value)) return undefined;
  const colon = value.indexOf(':');
  if (colon < 0) return `${refMessage}; ${JSON.stringify(value.slice(0, 300))} has no colon between namespace and id`;
  const [namespace, id] = [value.slice(0, colon), value.slice(colon + 1)];
  const nameProblem = explainName(namespace);
  if (nameProblem) return `${refMessage}; the namespace: ${nameProblem}`;
  if (id === '') return `${refMessage}; the id after the colon is empty: ${ID_RULE}`;
  if (id.length > 256) return `${refMessage}; the id is ${id.length} characters long: ${ID_RULE}`;
  if (id === EVERY_SUBJECT_ID) return `${refMessage}; "*" (every subject of a namespace) is a subject's id, never an object's: ${ID_RULE}`;
  return `${refMessage}; the id holds ${firstRefused(id, ID_CHARACTER) ?? 'a refused character'}: ${ID_RULE}`;
}
/** A malformed subject is answered with `invalid-subject`, a malformed object with `invalid-object`. */
export const SubjectSchema = z
  .string()
  .regex(SUBJECT_PATTERN, refMessage)
  .describe('Subject, <namespace>:<id>, e.g. user:alice; <namespace>:* is every subject of the namespace (a public grant)');
export const ObjectSchema = z.string().regex(REF_PATTERN, refMessage).describe('Object, <namespace>:<id>, e.g. document:q3');
export const RelationSchema = NameSchema.describe('Relation name, e.g. viewer');

export const TimestampSchema = z.string().datetime().describe('ISO 8601 UTC timestamp');

export const TripleSchema = z.object({ subject: SubjectSchema, relation: RelationSchema, object: ObjectSchema }).strict().describe('A grant triple');

/** Query values arrive as strings: only decimal digits are a number here (Number() would also take 0x10, 1e2, " 5"). */
const DECIMAL = /^[0-9]+$/;
const limit = z.preprocess(
  (value) => (typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value),
  z.number().int().min(1).max(1000).default(100),
);
/** Typed as what callers pass (a number, or nothing): preprocess alone would type it `unknown`. */
export const LimitSchema = (limit as z.ZodEffects<z.ZodDefault<z.ZodNumber>, number, number | undefined>).describe(
  'Page size, 1 to 1000 (default 100)',
);
/** Any string: one this server did not issue, empty included, is answered with `invalid-cursor`. */
export const CursorSchema = z.string().describe("Opaque cursor from the previous page's next_cursor");

/**
 * Free text stored as given. PostgreSQL's text cannot hold U+0000, and an unpaired surrogate would
 * be stored as U+FFFD: both are refused rather than failing or changing what was sent.
 */
// eslint-disable-next-line no-control-regex -- U+0000 is what the pattern refuses
export const TEXT_PATTERN = /^(?:[^\u0000\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/;
export const TextSchema = z.string().regex(TEXT_PATTERN, 'must be text without U+0000 or unpaired surrogates');
/** The query of a route that defines none: any parameter is refused (400 invalid-request, docs/api.md), none is documented. */
export const NoQuerySchema = z.object({}).strict();
export const NextCursorSchema = z.string().nullable().describe('Cursor for the next page; null when the result is exhausted');
