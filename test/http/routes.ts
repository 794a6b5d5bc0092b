import { isAppRoute, type AppRoute, type AppRouter } from '@ts-rest/core';
import { contract, oauthServerOf, type RouteMetadata } from '../../contract/index.ts';

/** Every route of the contract that takes an API key (all but the OAuth protocol's), with a name like `grants.create`. */
export function contractRoutes(): Array<{ name: string; route: AppRoute; scope: RouteMetadata['scope'] }> {
  const out: Array<{ name: string; route: AppRoute; scope: RouteMetadata['scope'] }> = [];
  const walk = (router: AppRouter, prefix: string) => {
    for (const [key, value] of Object.entries(router)) {
      const name = prefix ? `${prefix}.${key}` : key;
      if (isAppRoute(value)) {
        if (!oauthServerOf(value)) out.push({ name, route: value, scope: (value.metadata as RouteMetadata).scope });
      } else walk(value as AppRouter, name);
    }
  };
  walk(contract, '');
  return out;
}

/** A concrete path for a route, its `:params` filled in. */
export const fillPath = (route: AppRoute, params: Record<string, string> = {}): string =>
  route.path.replace(/:([a-z_]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? 'x1'));
