import libraryStorage from 'oidc-provider/lib/helpers/als.js';
import { offWhenIdle } from '../../async-storage.ts';

/**
 * Runs one request through the OAuth library, which runs each of its requests in an
 * AsyncLocalStorage of its own and never switches it off: grantd does, once the library's last
 * request under way has settled (docs/decisions.md#the-oauth-librarys-request-context-is-on-only-while-it-answers).
 */
export const throughLibrary = offWhenIdle(libraryStorage);
