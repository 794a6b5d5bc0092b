import { isAppRoute, isAppRouteOtherResponse, isZodType, type AppRoute, type AppRouter } from '@ts-rest/core';
import { expect } from 'vitest';
import { contract, oauthServerOf, type RouteMetadata } from '../../contract/index.ts';

/** Every route of the contract, the OAuth protocol's included, with a name like `grants.create`. */
export function everyContractRoute(): { name: string; route: AppRoute }[] {
  const out: { name: string; route: AppRoute }[] = [];
  const walk = (router: AppRouter, prefix: string) => {
    for (const [key, value] of Object.entries(router)) {
      const name = prefix ? `${prefix}.${key}` : key;
      if (isAppRoute(value)) out.push({ name, route: value });
      else walk(value, name);
    }
  };
  walk(contract, '');
  return out;
}

/** Every route of the contract that takes an API key: all but the OAuth protocol's, which test/oauth drives through OAuth clients. */
export const contractRoutes = (): { name: string; route: AppRoute; scope: RouteMetadata['scope'] }[] =>
  everyContractRoute()
    .filter(({ route }) => !oauthServerOf(route))
    .map(({ name, route }) => ({ name, route, scope: (route.metadata as RouteMetadata).scope }));

/** A concrete path for a route, its `:params` filled in. */
export const fillPath = (route: AppRoute, params: Record<string, string> = {}): string =>
  route.path.replace(/:([a-z_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? 'x1'));

/**
 * Fails unless the response is one the route documents: its status is among the route's responses,
 * its content type the documented one, and its body parses with that response's schema (no body
 * where the route declares none).
 */
export function expectDocumentedResponse(route: AppRoute, res: DocumentedResponse, where = `${route.method} ${route.path}`): void {
  const declared = (route.responses as Record<number, Parameters<typeof isAppRouteOtherResponse>[0] | undefined>)[res.status];
  if (declared === undefined) return void expect.fail(`${where} answered ${res.status}, which the contract does not list`);
  const { schema, contentType } = isAppRouteOtherResponse(declared)
    ? { schema: declared.body, contentType: declared.contentType }
    : { schema: declared, contentType: 'application/json' };
  if (isZodType(schema)) {
    expect(res.headers['content-type'], `${where} answered ${res.status} with another content type`).toMatch(
      new RegExp(`^${contentType.replace('+', '\\+')}`),
    );
    const parsed = schema.safeParse(res.body);
    expect(
      parsed.success ? [] : parsed.error.issues,
      `${where} answered ${res.status} with a body the contract does not allow: ${res.text.slice(0, 300)}`,
    ).toEqual([]);
    // Zod drops fields its objects do not declare: what is left must be the whole body.
    expect(res.body, `${where} answered ${res.status} with fields the contract does not declare`).toEqual(parsed.data);
  } else {
    expect(res.text, `${where} answered ${res.status} with a body where the contract declares none`).toBe('');
  }
}

/** What expectDocumentedResponse reads of a response (supertest's has it). */
interface DocumentedResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: unknown;
  text: string;
}
