/**
 * Answers of the OAuth library's endpoints that sent no client credentials at all (no Authorization
 * header, no client_id, secret or assertion): their 401 is not a failed authentication, as a /v1
 * request with no key is not (docs/configuration.md#rate-limits). Kept by the response object,
 * which the library and Express share.
 */
export const withoutCredentials = new WeakSet<object>();
