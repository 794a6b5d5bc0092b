import { stripVTControlCharacters } from 'node:util';

/** What oidc-provider prints with console.warn as it loads on Node.js 20 (it works there: docs/development.md#nodejs). */
export const OIDC_PROVIDER_RUNTIME_WARNING = 'oidc-provider WARNING: Unsupported runtime. Use Node.js v22.x LTS, or a later LTS release.';

/**
 * Runs `load` with console.warn dropping the one line `warning` (compared without the colours a
 * terminal gets) and passing on every other, as before.
 */
export async function withoutWarning<T>(warning: string, load: () => Promise<T>): Promise<T> {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (args.length === 1 && typeof args[0] === 'string' && stripVTControlCharacters(args[0]) === warning) return;
    warn.apply(console, args);
  };
  try {
    return await load();
  } finally {
    console.warn = warn;
  }
}
