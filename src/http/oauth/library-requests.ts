import libraryStorage from 'oidc-provider/lib/helpers/als.js';

/** The library's requests under way. */
let underWay = 0;

/**
 * Runs one request through the OAuth library. The library runs each of its requests in an
 * AsyncLocalStorage, and on Node 20 the first `run` of one tracks every promise of the process from
 * then on, a check's included: it is switched off when the library's last request under way has
 * settled, and the library's next `run` switches it on again
 * (docs/decisions.md#the-oauth-librarys-request-context-is-on-only-while-it-answers).
 */
export function throughLibrary(answer: () => Promise<void>): Promise<void> {
  underWay++;
  return (async () => answer())().finally(() => {
    if (--underWay === 0) libraryStorage.disable();
  });
}
