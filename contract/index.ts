import { initContract, isAppRoute, type AppRouter } from '@ts-rest/core';
import { agentsContract } from './agents.ts';
import { changesContract } from './changes.ts';
import { checkContract } from './check.ts';
import { grantsContract } from './grants.ts';
import { keysContract } from './keys.ts';
import { namespacesContract } from './namespaces.ts';
import { objectsContract } from './objects.ts';
import { subjectsContract } from './subjects.ts';
import { oauthClientsContract, oauthProtocolRoutes, oauthServerOf } from './oauth.ts';
import { NoQuerySchema } from './schemas.ts';

const c = initContract();

/**
 * The router with NoQuerySchema as the query of every route that defines none: ts-rest checks no query
 * it is not given a schema for, and docs/api.md has every route refuse parameters it does not define.
 * The OAuth protocol's routes keep theirs: the OAuth library answers them. The types are left as they
 * are: a caller still passes no query to such a route.
 */
function refusingUndefinedQueries<T extends AppRouter>(router: T): T {
  return Object.fromEntries(
    Object.entries(router).map(([key, value]) => [
      key,
      !isAppRoute(value)
        ? refusingUndefinedQueries(value)
        : value.query !== undefined || oauthServerOf(value)
          ? value
          : { ...value, query: NoQuerySchema },
    ]),
  ) as T;
}

/**
 * The whole /v1 API: the server is type-checked against it, the OpenAPI document and the client derive
 * from it. ts-rest serves all of it but the OAuth protocol routes (oauthServerOf), which need no API key.
 */
export const contract = refusingUndefinedQueries(
  c.router(
    {
      check: checkContract.check,
      checkBulk: checkContract.checkBulk,
      explain: checkContract.explain,
      objects: objectsContract,
      subjects: subjectsContract,
      grants: grantsContract,
      namespaces: namespacesContract,
      agents: agentsContract,
      keys: keysContract,
      changes: changesContract,
      oauth: { clients: oauthClientsContract, ...oauthProtocolRoutes },
    },
    { pathPrefix: '/v1', strictStatusCodes: true },
  ),
);

export * from './changes.ts';
export * from './problems.ts';
export * from './schemas.ts';
export * from './metadata.ts';
export * from './scopes.ts';
export * from './oauth.ts';
