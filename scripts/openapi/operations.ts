import { isAppRouteNoBody, isAppRouteOtherResponse, isZodType } from '@ts-rest/core';
import type {
  MediaTypeObject,
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
  SecurityRequirementObject,
} from 'openapi3-ts/oas30';
import { oauthServerOf, PROBLEM_CONTENT_TYPE, REVISION_HEADER, type RouteMetadata } from '../../contract/index.ts';
import { CONSISTENCY_PARAMETER, headerRef, parameterDocs, REQUEST_ID_HEADER, successDescription } from './descriptions.ts';
import { EXAMPLES } from './examples.ts';
import type { ProblemResponses } from './problems.ts';
import { operationIdOf, tagOf, type RouteEntry } from './routes.ts';
import type { NamedSchemas } from './schemas.ts';

/*
 * Each operation as @ts-rest/open-api renders it, completed from its contract route: operation id,
 * tag, required scope, parameter docs, examples, response descriptions and headers, problem responses.
 */

export const BEARER_SCHEME = 'bearer';
/** An OAuth client's id and secret in HTTP Basic (client_secret_basic). */
export const CLIENT_SCHEME = 'oauthClient';

/**
 * How the caller of each OAuth protocol route authenticates: a confidential client by Basic (or by its
 * id and secret in the form, or a public client by its id alone: no scheme), introspection's callers
 * also by a Bearer key or token; the browser routes and registration take no credentials.
 */
const OAUTH_SECURITY: Record<string, SecurityRequirementObject[]> = {
  oauthToken: [{ [CLIENT_SCHEME]: [] }, {}],
  oauthRevoke: [{ [CLIENT_SCHEME]: [] }, {}],
  oauthIntrospect: [{ [CLIENT_SCHEME]: [] }, { [BEARER_SCHEME]: [] }],
  oauthIntrospectByQuery: [{ [BEARER_SCHEME]: [] }],
  oauthAuthorize: [],
  oauthResume: [],
  oauthConsent: [],
  oauthDecide: [],
  // Open: any client may register itself (RFC 7591), rate limited per address.
  oauthRegister: [],
};

/** A route's security and the words saying so: its API key scope, or for an OAuth protocol route its callers. */
function securityOf(entry: RouteEntry, operationId: string): { security: SecurityRequirementObject[]; 'x-required-scope'?: string; note: string } {
  if (oauthServerOf(entry.route)) {
    const security = OAUTH_SECURITY[operationId];
    if (!security) throw new Error(`${operationId}: no security declared for this OAuth route`);
    return { security, note: 'An OAuth 2.0 protocol route (docs/oauth.md): errors are RFC 6749 `{error, error_description}` bodies, not problems.' };
  }
  const { scope } = entry.route.metadata as RouteMetadata;
  return {
    security: [{ [BEARER_SCHEME]: [] }],
    'x-required-scope': scope,
    note: `Requires an API key with scope \`${scope}\`${scope === 'admin' ? '' : ' (or `admin`)'}.`,
  };
}

/** What decorating an operation draws on besides the operation itself. */
export interface OperationContext {
  routes: Map<string, RouteEntry>;
  named: NamedSchemas;
  problems: ProblemResponses;
}

/** The document's paths: every operation of `generated` decorated. */
export function decoratePaths(generated: OpenAPIObject['paths'], context: OperationContext): OpenAPIObject['paths'] {
  const paths: OpenAPIObject['paths'] = {};
  for (const [path, item] of Object.entries(generated)) {
    for (const [method, op] of Object.entries(item) as [string, OperationObject][]) {
      const entry = context.routes.get(operationIdOf(String(op.operationId).split('.')));
      if (!entry) throw new Error(`no contract route for ${method} ${path}`);
      paths[path] = { ...paths[path], [method]: decorateOperation(op, entry, context) };
    }
  }
  return paths;
}

function decorateOperation(op: OperationObject, entry: RouteEntry, context: OperationContext): OperationObject {
  const operationId = operationIdOf(entry.keys);
  const { note, ...security } = securityOf(entry, operationId);
  const examples = EXAMPLES[operationId] ?? {};
  const parameters = parametersOf(op, operationId, context.named);
  if ((entry.route.metadata as RouteMetadata | undefined)?.revisions === 'reads') parameters.push(CONSISTENCY_PARAMETER);
  const requestBody = requestBodyOf(op, examples, context.named);
  return {
    operationId,
    tags: [tagOf(entry.keys).name],
    summary: op.summary,
    description: [op.description, note].filter(Boolean).join('\n\n'),
    ...security,
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: responsesOf(op, entry, examples, context),
  };
}

function parametersOf(op: OperationObject, operationId: string, named: NamedSchemas): ParameterObject[] {
  return ((op.parameters ?? []) as ParameterObject[]).map((p): ParameterObject => {
    const docs = parameterDocs(operationId, p);
    return {
      name: p.name,
      in: p.in,
      description: p.description ?? docs.description,
      ...(p.required ? { required: true } : {}),
      schema: named.asComponent(p.schema!),
      ...(docs.example !== undefined ? { example: docs.example } : {}),
    };
  });
}

function requestBodyOf(op: OperationObject, examples: Record<string, MediaTypeObject>, named: NamedSchemas): RequestBodyObject | undefined {
  if (!op.requestBody) return undefined;
  const [[contentType, media]] = Object.entries((op.requestBody as RequestBodyObject).content) as [[string, MediaTypeObject]];
  const schema = media.schema as SchemaObject;
  return {
    description: schema.description ?? (contentType === 'application/json' ? 'JSON body' : 'Form body'),
    required: true,
    content: { [contentType]: { schema: named.asComponent(schema), ...examples.request } },
  };
}

/** The operation's responses by status, each as its contract route declares it. */
function responsesOf(
  op: OperationObject,
  entry: RouteEntry,
  examples: Record<string, MediaTypeObject>,
  { named, problems }: OperationContext,
): Record<string, ResponseObject | ReferenceObject> {
  const operationId = operationIdOf(entry.keys);
  const responses: Record<string, ResponseObject | ReferenceObject> = {};
  // A write's successes carry the revision that includes it.
  const revision: Record<string, ReferenceObject> =
    (entry.route.metadata as RouteMetadata | undefined)?.revisions === 'writes' ? { [REVISION_HEADER]: headerRef(REVISION_HEADER) } : {};
  for (const [status, response] of Object.entries(op.responses) as [string, ResponseObject][]) {
    const declared = entry.route.responses[Number(status)];
    if (declared === undefined) throw new Error(`${operationId}: no response ${status} in the contract`);
    const media = response.content?.['application/json'];
    if (isAppRouteOtherResponse(declared) && declared.contentType === PROBLEM_CONTENT_TYPE) {
      responses[status] = problems.respond(status, media!.schema as SchemaObject, (entry.route.metadata as RouteMetadata | undefined)?.scope);
    } else if (isAppRouteOtherResponse(declared)) {
      // An OAuth route's RFC 6749 error (JSON) or page (HTML).
      responses[status] = {
        description: successDescription(operationId, status),
        headers: { ...REQUEST_ID_HEADER },
        content: { [declared.contentType]: { schema: named.asComponent(media!.schema!) } },
      };
    } else if (isZodType(declared)) {
      responses[status] = {
        description: successDescription(operationId, status),
        headers: { ...REQUEST_ID_HEADER, ...revision },
        content: { 'application/json': { schema: named.asComponent(media!.schema!), ...examples[status] } },
      };
    } else if (isAppRouteNoBody(declared)) {
      const redirect: Record<string, ReferenceObject> = status.startsWith('3') ? { Location: headerRef('Location') } : {};
      responses[status] = { description: successDescription(operationId, status), headers: { ...REQUEST_ID_HEADER, ...redirect, ...revision } };
    } else {
      throw new Error(`${operationId} ${status}: only zod schemas, c.noBody() and problem responses can be documented`);
    }
  }
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}
