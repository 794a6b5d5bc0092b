import { generateOpenApi } from '@ts-rest/open-api';
import { contract, type RouteMetadata } from '../contract/index.ts';

/** The OpenAPI 3.0 document of the /v1 API, derived from the contract alone. */
export function buildOpenApiDocument() {
  return generateOpenApi(
    contract,
    {
      info: {
        title: 'grantd',
        version: '0.1.0',
        description: 'Multi-tenant, relationship-based authorization service with first-class AI agents.',
      },
      servers: [{ url: 'http://localhost:8080' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key: svc_live_...' } } },
      security: [{ bearer: [] }],
    },
    {
      setOperationId: 'concatenated-path',
      operationMapper: (operation, route) => {
        const { scope } = route.metadata as RouteMetadata;
        return { ...operation, 'x-required-scope': scope, security: [{ bearer: [] }] };
      },
    },
  );
}
