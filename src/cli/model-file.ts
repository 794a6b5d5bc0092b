import { readFile } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { LineCounter, parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { CreateAgentSchema } from '../../contract/agents.ts';
import { CheckRequestSchema } from '../../contract/check.ts';
import { MODEL_LIMITS, UpdateNamespaceSchema } from '../../contract/namespaces.ts';
import { ListObjectsQuerySchema } from '../../contract/objects.ts';
import { ID_PATTERN, NameSchema, ObjectSchema, RelationSchema, SubjectSchema, TripleSchema } from '../../contract/schemas.ts';
import { BUILTIN_NAMESPACES } from '../engine/refs.ts';
import { assertNoExclusionCycle, validateRelations } from '../engine/definition-checks.ts';
import { CompiledSchema, type NamespaceDefinition, type RelationDefinitions } from '../engine/schema.ts';
import { DomainError } from '../errors.ts';

/**
 * A model file (docs/model.md#model-files): one YAML or JSON document holding a tenant's namespaces
 * and, for `grantd test`, grants, agents and assertions. Every shape is the API's own (the
 * contract's schemas), so what the file accepts is what the API would.
 */

/** An object id without its namespace, as GET /v1/objects lists it. */
const ObjectIdSchema = z.string().regex(ID_PATTERN, 'must be an object id without its namespace, 1-256 characters of A-Z a-z 0-9 . _ - @ | ~ + =');

/** The query of GET /v1/subjects (docs/api.md), built from the contract's field schemas. */
const SubjectsQuerySchema = z.object({ object: ObjectSchema, relation: RelationSchema, subject_namespace: NameSchema }).strict();

const AssertionSchema = z
  .object({
    check: CheckRequestSchema.optional().describe('A check, and `allowed`: its expected answer'),
    allowed: z.boolean().optional(),
    objects: ListObjectsQuerySchema.pick({ namespace: true, subject: true, relation: true }).optional(),
    subjects: SubjectsQuerySchema.optional(),
    expect: z.array(z.string()).optional().describe('The ids (objects) or subjects (subjects) listed, in any order'),
  })
  .strict()
  .superRefine((a, ctx) => {
    const kinds = (['check', 'objects', 'subjects'] as const).filter((kind) => a[kind] !== undefined);
    if (kinds.length !== 1) {
      ctx.addIssue({ code: 'custom', message: `an assertion holds exactly one of check, objects or subjects, not ${kinds.join(' and ') || 'none'}` });
      return;
    }
    const [kind] = kinds;
    if (kind === 'check' && (a.allowed === undefined || a.expect !== undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a check assertion gives its expected answer as allowed: true or false (and no expect)' });
    }
    if (kind !== 'check' && (a.expect === undefined || a.allowed !== undefined)) {
      ctx.addIssue({ code: 'custom', message: `a ${kind} assertion gives the expected listing as expect: [...] (and no allowed)` });
    }
    const item = kind === 'objects' ? ObjectIdSchema : SubjectSchema;
    a.expect?.forEach((value, i) => {
      for (const issue of item.safeParse(value).error?.issues ?? []) ctx.addIssue({ ...issue, path: ['expect', i] });
    });
  });

export const ModelFileSchema = z
  .object({
    namespaces: z.record(NameSchema, UpdateNamespaceSchema).default({}).describe('By name: {} for an open namespace, or {relations: {...}}'),
    agents: z.array(CreateAgentSchema).default([]),
    grants: z.array(TripleSchema).default([]),
    assertions: z.array(AssertionSchema).default([]),
  })
  .strict();

export type ModelFile = z.output<typeof ModelFileSchema>;
export type Assertion = ModelFile['assertions'][number];

/** A model file that cannot be used: a message naming the file, and the line and column where known. */
export class ModelFileError extends Error {
  override name = 'ModelFileError';
}

/** A parsed and validated model file, with where each of its values is, for messages. */
export interface LoadedModel {
  path: string;
  model: ModelFile;
  /** `file:line:column` of the value at a path of the document (the file alone if unknown). */
  where: (path: readonly (string | number)[]) => string;
}

/**
 * Reads and validates a model file: YAML syntax (with line and column), the schema, and the
 * namespaces as the API would (consistent definitions, limits, `user` and `agent` open). Throws a
 * ModelFileError listing every problem found.
 */
export async function loadModelFile(path: string): Promise<LoadedModel> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new ModelFileError(`${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return `${path}:${line}:${col}`;
  };
  if (document.errors.length > 0) {
    throw new ModelFileError(document.errors.map((e) => `${at(e.pos[0])}: ${e.message.split('\n')[0]}`).join('\n'));
  }
  const where = (path_: readonly (string | number)[]) => {
    for (let depth = path_.length; depth >= 0; depth--) {
      const node = document.getIn(path_.slice(0, depth), true) as { range?: [number, number, number] } | undefined;
      if (node?.range) return at(node.range[0]);
    }
    return path;
  };
  const parsed = ModelFileSchema.safeParse(document.toJS() ?? {});
  if (!parsed.success) {
    throw new ModelFileError(parsed.error.issues.map((issue) => `${where(issue.path)}: ${label(issue.path)}${issue.message}`).join('\n'));
  }
  const loaded = { path, model: parsed.data, where };
  assertNamespaces(loaded);
  return loaded;
}

const label = (path: readonly (string | number)[]) => (path.length > 0 ? `${path.join('.')}: ` : '');

/** A definition problem's path (`relations.viewer.requires[0]`) as the file's path below the namespace; [] for none. */
const fieldPath = (path: string | undefined): (string | number)[] =>
  path === undefined
    ? []
    : path
        .split(/[.[\]]+/)
        .filter(Boolean)
        .map((part) => (/^\d+$/.test(part) ? Number(part) : part));

/** The file's namespaces as the API would take them: each consistent, user and agent open, the model within its limits. */
function assertNamespaces({ model, where }: LoadedModel): void {
  const problems: string[] = [];
  for (const [name, { relations }] of Object.entries(model.namespaces)) {
    if (isBuiltin(name) && relations !== undefined) {
      problems.push(`${where(['namespaces', name])}: namespaces.${name}: ${name} is built in and open; give it as {} or leave it out`);
    }
    try {
      if (relations) validateRelations(relations);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      const at = ['namespaces', name, ...fieldPath(error.errors?.[0]?.path)];
      problems.push(`${where(at)}: ${label(at)}${error.errors?.[0]?.message ?? error.detail}`);
    }
  }
  const own = Object.keys(model.namespaces).filter((name) => !isBuiltin(name)).length;
  if (own > MODEL_LIMITS.namespacesPerTenant) {
    problems.push(
      `${where(['namespaces'])}: a tenant holds at most ${MODEL_LIMITS.namespacesPerTenant} namespaces besides user and agent, and this file ${own}`,
    );
  }
  if (problems.length === 0) {
    try {
      assertNoExclusionCycle(definitionsOf(model));
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      problems.push(`${where(['namespaces'])}: namespaces: ${error.detail}`);
    }
  }
  if (problems.length === 0) {
    const rows = CompiledSchema.rowsOf(definitionsOf(model));
    if (rows > MODEL_LIMITS.compiledRowsPerTenant) {
      problems.push(
        `${where(['namespaces'])}: a tenant's model compiles to at most ${MODEL_LIMITS.compiledRowsPerTenant} rows, and this file's to ${rows}`,
      );
    }
  }
  if (problems.length > 0) throw new ModelFileError(problems.join('\n'));
}

export const isBuiltin = (name: string): boolean => BUILTIN_NAMESPACES.includes(name as never);

/** The file's namespaces as the engine compiles them, `user` and `agent` included (open) whether or not the file names them. */
export function definitionsOf(model: ModelFile): NamespaceDefinition[] {
  const given = Object.entries(model.namespaces).map(([name, ns]) => ({ name, relations: ns.relations ?? null }));
  const builtins = BUILTIN_NAMESPACES.filter((name) => !(name in model.namespaces)).map((name) => ({ name, relations: null }));
  return [...given, ...builtins];
}

/** Whether two definitions are the same (relations in any order). */
export const sameDefinition = (a: RelationDefinitions | null, b: RelationDefinitions | null): boolean => isDeepStrictEqual(a, b);

/** The object's entries in key order: the database keeps no order of relations, so an export is sorted to be stable. */
const byKey = <T>(object: Record<string, T>): Record<string, T> => Object.fromEntries(Object.entries(object).sort(([a], [b]) => (a < b ? -1 : 1)));

/** Namespaces in the model file's format, by name, relations by name: what `grantd schema export` prints. */
export function formatNamespaces(namespaces: readonly NamespaceDefinition[], json: boolean): string {
  const byName = Object.fromEntries(
    [...namespaces]
      .filter((ns) => !isBuiltin(ns.name))
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .map((ns) => [ns.name, ns.relations === null ? {} : { relations: byKey(ns.relations) }]),
  );
  return json ? `${JSON.stringify({ namespaces: byName }, null, 2)}\n` : stringify({ namespaces: byName });
}
