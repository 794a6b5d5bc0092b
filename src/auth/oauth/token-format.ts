/** Prefixes that make grantd's OAuth tokens recognisable (in logs, secret scanners, and the bearer lookup). */
export const ACCESS_TOKEN_PREFIX = 'svc_at_';
export const REFRESH_TOKEN_PREFIX = 'svc_rt_';

/** An access token: the prefix and the library's 43 URL-safe characters (256 random bits). */
const ACCESS_TOKEN = new RegExp(`^${ACCESS_TOKEN_PREFIX}[A-Za-z0-9_-]{43}$`);

export const looksLikeAccessToken = (value: string): boolean => ACCESS_TOKEN.test(value);
