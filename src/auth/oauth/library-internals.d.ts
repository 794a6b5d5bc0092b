// Modules of oidc-provider that it does not export, as library-seams.ts uses them (the only module that may).

/** The library's one AsyncLocalStorage (each of its requests runs in it). */
declare module 'oidc-provider/lib/helpers/als.js' {
  import type { AsyncLocalStorage } from 'node:async_hooks';

  const storage: AsyncLocalStorage<unknown>;
  export default storage;
}

/** The library's per-provider internal state: grantd reads its grant type handlers and response modes. */
declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  import type { KoaContextWithOIDC } from 'oidc-provider';

  export default function instance(provider: object): {
    grantTypeHandlers: Map<string, (ctx: KoaContextWithOIDC) => Promise<void>>;
    responseModes: Map<string, (ctx: KoaContextWithOIDC, redirectUri: string, params: Record<string, string>) => void | Promise<void>>;
  };
}

/** How the library ends a grant on its own reuse detection (every token, code and the grant). */
declare module 'oidc-provider/lib/helpers/revoke.js' {
  import type { KoaContextWithOIDC } from 'oidc-provider';

  export default function revoke(ctx: KoaContextWithOIDC, grantId: string | undefined): Promise<void>;
}
