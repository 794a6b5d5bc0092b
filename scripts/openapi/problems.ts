import type { ExampleObject, MediaTypeObject, ReferenceObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas30';
import { PROBLEM_CONTENT_TYPE, PROBLEMS, type ProblemType } from '../../contract/index.ts';
import { DEFAULT_CONFIG, type Config } from '../../src/config.ts';
import { headerRef, REQUEST_ID_HEADER, STATUS_TEXT } from './descriptions.ts';
import { PROBLEM_EXAMPLE } from './examples.ts';
import { canonical } from './json.ts';
import { schemaRef } from './schemas.ts';

/*
 * Problem responses, which @ts-rest/open-api drops (they are `c.otherResponse`s): a schema per set of
 * problem types a response can carry, a shared response per single type, and an example per type.
 */

/** The problem responses of the document, collected route by route, and the components they need. */
export class ProblemResponses {
  private readonly schemas = new Map<string, SchemaObject>();
  private readonly responses = new Map<string, ResponseObject>();
  private readonly usedTypes = new Set<ProblemType>();

  /** The response for a problem `schema` (as @ts-rest/open-api renders it) under `status`. */
  respond(status: string, schema: SchemaObject): ResponseObject | ReferenceObject {
    const types = problemTypesOf(schema);
    for (const t of types) this.usedTypes.add(t);
    const schemaName = `Problem${types.map(pascal).join('Or')}`;
    const known = this.schemas.get(schemaName);
    if (known && canonical(known) !== canonical(schema)) throw new Error(`two different schemas would be named ${schemaName}`);
    this.schemas.set(schemaName, schema);
    const response: ResponseObject = {
      description: problemDescription(status, types),
      headers: headersOf(types),
      content: { [PROBLEM_CONTENT_TYPE]: { schema: schemaRef(schemaName), ...problemExamples(types, status) } },
    };
    if (types.length > 1) return response;
    const responseName = pascal(types[0]!);
    this.responses.set(responseName, response);
    return { $ref: `#/components/responses/${responseName}` };
  }

  /** The problem schemas, by name. */
  componentSchemas(): [string, SchemaObject][] {
    return [...this.schemas].sort(([a], [b]) => (a < b ? -1 : 1));
  }

  /** The responses of a single problem type, by name. */
  componentResponses(): Record<string, ResponseObject> {
    return Object.fromEntries([...this.responses].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  /** An example of each problem type a response carries. */
  componentExamples(): Record<string, ExampleObject> {
    return Object.fromEntries([...this.usedTypes].sort().map((t) => [problemExampleName(t), { summary: t, value: PROBLEM_EXAMPLE[t] }]));
  }
}

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

/** Name of the components/examples entry holding PROBLEM_EXAMPLE[type]. */
const problemExampleName = (type: ProblemType): string => `Problem${pascal(type)}`;

function problemExamples(types: ProblemType[], status: string): MediaTypeObject {
  for (const t of types) {
    if (String(PROBLEMS[t].status) !== status) throw new Error(`problem type ${t} is answered with ${PROBLEMS[t].status}, not ${status}`);
  }
  return { examples: Object.fromEntries(types.map((t) => [t, { $ref: `#/components/examples/${problemExampleName(t)}` }])) };
}

const pascal = (kebab: string): string =>
  kebab
    .split(/[-_]/)
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('');
