/** The library's per-provider internal state, which it does not export: grantd reads its grant type handlers. */
declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  import type { KoaContextWithOIDC } from 'oidc-provider';

  export default function instance(provider: object): {
    grantTypeHandlers: Map<string, (ctx: KoaContextWithOIDC) => Promise<void>>;
  };
}
