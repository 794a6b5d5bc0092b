import { isAppRoute, isAppRouteOtherResponse, type AppRoute, type AppRouter } from '@ts-rest/core';
import type { TagObject } from 'openapi3-ts/oas30';

/*
 * The contract's routes as the document names them: operation ids, paths and tags.
 */

export interface RouteEntry {
  /** Contract keys leading to the route, e.g. ['grants', 'list']. */
  keys: string[];
  route: AppRoute;
}

function routesOf(router: AppRouter, keys: string[] = []): RouteEntry[] {
  return Object.entries(router).flatMap(([key, value]) =>
    isAppRoute(value) ? [{ keys: [...keys, key], route: value }] : routesOf(value, [...keys, key]),
  );
}

/** Readable, stable operation id: the contract keys in camelCase, e.g. `grantsList`, `checkBulk`. */
export const operationIdOf = (keys: string[]): string => keys.map((k, i) => (i === 0 ? k : k.charAt(0).toUpperCase() + k.slice(1))).join('');

/** The router's routes by operation id; two routes with one id are an error. */
export function routesByOperationId(router: AppRouter): Map<string, RouteEntry> {
  const entries = routesOf(router);
  const byOperationId = new Map(entries.map((e) => [operationIdOf(e.keys), e]));
  if (byOperationId.size !== entries.length) throw new Error('two contract routes map to the same operation id');
  return byOperationId;
}

/** The OpenAPI path of a contract route: `/v1/agents/:external_id` is `/v1/agents/{external_id}`. */
export const openApiPathOf = (route: AppRoute): string => route.path.replace(/:(\w+)/g, '{$1}');

/** Tag of every operation, by the contract key it lives under. */
export const TAGS: Record<string, TagObject> = {
  check: { name: 'Check', description: 'Authorization checks: does a subject hold a relation on an object?' },
  objects: { name: 'Objects', description: 'Which objects of a namespace a subject reaches under a relation.' },
  subjects: { name: 'Subjects', description: 'Which subjects of a namespace hold a relation on an object.' },
  grants: { name: 'Grants', description: 'Relationship grants: (subject, relation, object) triples.' },
  namespaces: { name: 'Namespaces', description: 'Kinds of objects, and the relations they declare.' },
  agents: { name: 'Agents', description: 'Non-human subjects with a scope mask, and their killswitch.' },
  keys: { name: 'Keys', description: 'API keys of the tenant. Every operation needs the `admin` scope.' },
  changes: { name: 'Changes', description: "The tenant's changes in commit order, each with its actor: a feed to follow." },
  oauth: {
    name: 'OAuth',
    description:
      "OAuth 2.0 (docs/oauth.md): the tenant's clients (the `admin` scope), and the protocol routes: form-encoded, RFC 6749 errors, no API key.",
  },
};

/** Top-level contract routes filed under another route's tag. */
const TAG_ALIAS: Record<string, string> = { checkBulk: 'check', explain: 'check' };

/** The tag of the route reached by these contract keys. */
export function tagOf(keys: string[]): TagObject {
  const tag = TAGS[TAG_ALIAS[keys[0]!] ?? keys[0]!];
  if (!tag) throw new Error(`no tag for the contract key ${keys[0]}`);
  return tag;
}

/** The contract with every `c.otherResponse` replaced by its body schema, which @ts-rest/open-api renders. */
export function withPlainResponses(router: AppRouter): AppRouter {
  return Object.fromEntries(
    Object.entries(router).map(([key, value]) => {
      if (!isAppRoute(value)) return [key, withPlainResponses(value)];
      const responses = Object.fromEntries(
        Object.entries(value.responses).map(([status, response]) => [status, isAppRouteOtherResponse(response) ? response.body : response]),
      );
      return [key, { ...value, responses }];
    }),
  ) as AppRouter;
}
