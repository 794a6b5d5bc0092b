import type { ExampleObject, MediaTypeObject, ReferenceObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas30';
import { PROBLEM_CONTENT_TYPE, PROBLEMS, type KeyScope, type ProblemType } from '../../contract/index.ts';
import { DEFAULT_CONFIG, type Config } from '../../src/config.ts';
import { headerRef, REQUEST_ID_HEADER, STATUS_TEXT } from './descriptions.ts';
import { problemExample } from './examples.ts';
import { canonical } from './json.ts';
import { schemaRef } from './schemas.ts';

/*
 * Problem responses, which @ts-rest/open-api drops (they are `c.otherResponse`s): every one refers to
 * the one Problem schema, narrowing its `type` to the problem types the response can carry (allOf);
 * a shared response per single type, and an example per type (per scope for `insufficient-scope`).
 */

const PROBLEM_SCHEMA = 'Problem';
const ALL_TYPES = Object.keys(PROBLEMS) as ProblemType[];

/** The problem responses of the document, collected route by route, and the components they need. */
export class ProblemResponses {
  private problemSchema: SchemaObject | undefined;
  private readonly responses = new Map<string, ResponseObject>();
  private readonly examples = new Map<string, ExampleObject>();

  /**
   * The response for a problem `schema` (as @ts-rest/open-api renders it) under `status`, for an
   * operation requiring `scope` (none for the OAuth protocol routes).
   */
  respond(status: string, schema: SchemaObject, scope: KeyScope | undefined): ResponseObject | ReferenceObject {
    const types = problemTypesOf(schema);
    this.useProblemSchema(schema);
    const response: ResponseObject = {
      description: problemDescription(status, types),
      headers: headersOf(types),
      content: { [PROBLEM_CONTENT_TYPE]: { schema: narrowed(types), ...this.problemExamples(types, status, scope) } },
    };
    if (types.length > 1) return response;
    const responseName = variantName(types[0]!, scope);
    this.responses.set(responseName, response);
    return { $ref: `#/components/responses/${responseName}` };
  }

  /** components/schemas' Problem, with every problem type. */
  componentSchemas(): [string, SchemaObject][] {
    if (!this.problemSchema) throw new Error('no problem response was documented');
    return [[PROBLEM_SCHEMA, this.problemSchema]];
  }

  /** The responses of a single problem type, by name. */
  componentResponses(): Record<string, ResponseObject> {
    return Object.fromEntries([...this.responses].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  /** An example of each problem type a response carries. */
  componentExamples(): Record<string, ExampleObject> {
    return Object.fromEntries([...this.examples].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  /** Every problem response's schema is the contract's problem schema but for its `type` enum: Problem has them all. */
  private useProblemSchema(schema: SchemaObject): void {
    const typeProperty = schema.properties!.type as SchemaObject;
    const problem: SchemaObject = { ...schema, properties: { ...schema.properties, type: { ...typeProperty, enum: ALL_TYPES } } };
    if (this.problemSchema && canonical(this.problemSchema) !== canonical(problem))
      throw new Error('two problem responses differ beyond their types');
    this.problemSchema = problem;
  }

  private problemExamples(types: ProblemType[], status: string, scope: KeyScope | undefined): MediaTypeObject {
    const refs = types.map((type): [ProblemType, ReferenceObject] => {
      if (String(PROBLEMS[type].status) !== status) throw new Error(`problem type ${type} is answered with ${PROBLEMS[type].status}, not ${status}`);
      const name = `Problem${variantName(type, scope)}`;
      this.examples.set(name, { summary: type, value: problemExample(type, scope) });
      return [type, { $ref: `#/components/examples/${name}` }];
    });
    return { examples: Object.fromEntries(refs) };
  }
}

/** Problem, its `type` narrowed to these types. */
const narrowed = (types: ProblemType[]): SchemaObject => ({
  allOf: [schemaRef(PROBLEM_SCHEMA), { type: 'object', properties: { type: { type: 'string', enum: types } } }],
});

/** The name of a problem type's response and example: an `insufficient-scope` one names the scope, as its detail does. */
const variantName = (type: ProblemType, scope: KeyScope | undefined): string =>
  type === 'insufficient-scope' && scope ? `${pascal(type)}${pascal(scope)}` : pascal(type);

function problemTypesOf(schema: SchemaObject): ProblemType[] {
  const typeSchema = schema.properties?.type as SchemaObject | undefined;
  const types = typeSchema?.enum as ProblemType[] | undefined;
  if (!types?.length) throw new Error(`a problem response schema without a type enum: ${JSON.stringify(schema)}`);
  return types;
}

const problemDescription = (status: string, types: ProblemType[]): string =>
  types.length === 1
    ? `${STATUS_TEXT[status] ?? status}, \`${types[0]}\`: ${meaningOf(types[0]!)}.`
    : [`${STATUS_TEXT[status] ?? status}, one of these problem types:`, '', ...types.map((t) => `- \`${t}\`: ${meaningOf(t)}`)].join('\n');

/** The problem type's meaning, each `{SETTING}` in it replaced by the setting's default. */
function meaningOf(type: ProblemType): string {
  return PROBLEMS[type].meaning.replace(/\{([A-Z_]+)\}/g, (_, name: string) => {
    const value = DEFAULT_CONFIG[name as keyof Config];
    if (value === undefined) throw new Error(`the meaning of ${type} names ${name}, which has no default`);
    return String(value);
  });
}

function headersOf(types: ProblemType[]): Record<string, ReferenceObject> {
  const extra = types.length === 1 ? PROBLEMS[types[0]!].headers : [];
  return { ...REQUEST_ID_HEADER, ...Object.fromEntries(extra.map((h) => [h, headerRef(h)])) };
}

const pascal = (kebab: string): string =>
  kebab
    .split(/[-_:]/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('');
