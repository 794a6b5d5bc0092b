import { initContract } from '@ts-rest/core';
import { agentsContract } from './agents.ts';
import { changesContract } from './changes.ts';
import { checkContract } from './check.ts';
import { grantsContract } from './grants.ts';
import { keysContract } from './keys.ts';
import { namespacesContract } from './namespaces.ts';
import { objectsContract } from './objects.ts';
import { subjectsContract } from './subjects.ts';
import { oauthClientsContract, oauthProtocolRoutes } from './oauth.ts';

const c = initContract();

/**
 * The whole /v1 API: the server is type-checked against it, the OpenAPI document and the client derive
 * from it. ts-rest serves all of it but the OAuth protocol routes (oauthServerOf), which need no API key.
 */
export const contract = c.router(
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
);

export * from './changes.ts';
export * from './problems.ts';
export * from './schemas.ts';
export * from './scopes.ts';
export * from './oauth.ts';
