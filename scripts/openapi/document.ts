import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateOpenApi } from '@ts-rest/open-api';
import type { OpenAPIObject, OperationObject } from 'openapi3-ts/oas30';
import { contract } from '../../contract/index.ts';
import { packageRoot } from '../../src/package-root.ts';
import { HEADERS, INFO_DESCRIPTION } from './descriptions.ts';
import { clone } from './json.ts';
import { codeSpanPlaceholders } from './markdown.ts';
import { BEARER_SCHEME, CLIENT_SCHEME, decoratePaths } from './operations.ts';
import { portablePatterns } from './patterns.ts';
import { ProblemResponses } from './problems.ts';
import { routesByOperationId, TAGS, withPlainResponses } from './routes.ts';
import { untypedSchemas } from './schema-checks.ts';
import { componentSchemas, NamedSchemas } from './schemas.ts';

/*
 * The OpenAPI 3.0 document of the /v1 API, derived from the ts-rest contract alone:
 * @ts-rest/open-api renders routes, parameters and zod schemas; the modules beside this one fill what
 * it leaves out (problem responses, which it drops because they are `c.otherResponse`s; operation ids,
 * tags, scopes, response descriptions and headers, examples) and move the contract's named schemas
 * into components/schemas, referenced by $ref wherever the same schema appears.
 * Pure and deterministic: the same contract always gives the same document.
 */

const OPENAPI_VERSION = '3.0.3';

/** The OpenAPI 3.0 document of the /v1 API, derived from the contract alone. */
export function buildOpenApiDocument(): OpenAPIObject {
  const routes = routesByOperationId(contract);
  const generated = clone(
    generateOpenApi(withPlainResponses(contract), { info: { title: 'grantd', version: packageVersion() } }, { setOperationId: 'concatenated-path' }),
  ) as unknown as OpenAPIObject;
  const named = new NamedSchemas();
  const problems = new ProblemResponses();
  const paths = decoratePaths(generated.paths, { routes, named, problems });

  const usedTags = new Set(Object.values(paths).flatMap((item) => Object.values(item).flatMap((op: OperationObject) => op.tags ?? [])));
  const document: OpenAPIObject = {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'grantd',
      version: generated.info.version,
      description: INFO_DESCRIPTION,
      license: { name: 'MIT', url: 'https://spdx.org/licenses/MIT.html' },
    },
    // Relative: the grantd that serves this document (GET /openapi.json) is the one to call.
    servers: [{ url: '/', description: 'The grantd serving this document' }],
    tags: Object.values(TAGS).filter((t) => usedTags.has(t.name)),
    security: [{ [BEARER_SCHEME]: [] }],
    paths,
    components: {
      securitySchemes: {
        [BEARER_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'svc_live_<base62>',
          description: 'An API key of the tenant, `svc_live_` followed by at least 40 base62 characters, or an OAuth access token (`svc_at_...`).',
        },
        [CLIENT_SCHEME]: { type: 'http', scheme: 'basic', description: "An OAuth client's id and secret (client_secret_basic, RFC 6749 2.3.1)." },
      },
      schemas: componentSchemas(named, problems.componentSchemas()),
      responses: problems.componentResponses(),
      headers: HEADERS,
      examples: problems.componentExamples(),
    },
  };

  portablePatterns(document);
  codeSpanPlaceholders(document);
  const untyped = untypedSchemas(document);
  if (untyped.length) throw new Error(`schemas without a type: ${untyped.join(', ')}`);
  return document;
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
