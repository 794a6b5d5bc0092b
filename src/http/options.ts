import express, { type Router } from 'express';
import { DEFAULT_CONFIG, publicUrl, type Config } from '../config.ts';

/** How the HTTP edge bounds and guards itself, from the GRANTD_* settings (docs/configuration.md#timeouts-connections-and-shutdown; the metrics token: #operational-endpoints). */
export interface HttpOptions {
  /** The request line and headers must arrive within this (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** Then a body the API reads must arrive within this; Node's requestTimeout is the two together. */
  bodyTimeoutMs: number;
  /** An idle connection between requests is closed after this (Node's keepAliveTimeout). */
  keepAliveTimeoutMs: number;
  /** Connections one process holds open at most; further ones are closed at once. */
  maxConnections: number;
  /** When set, GET /metrics needs `Authorization: Bearer <this token>`. */
  metricsToken: string | undefined;
  /** The OAuth issuer, GRANTD_PUBLIC_URL or http://localhost:<PORT> (docs/oauth.md). */
  publicUrl: string;
  /** OAuth access tokens' lifetime in seconds (GRANTD_OAUTH_ACCESS_TTL). */
  accessTokenTtlSeconds: number;
  /** The built console's folder (default dist/console; docs/console.md). */
  consoleDir?: string;
}

export const httpOptions = (config: Config): HttpOptions => ({
  headersTimeoutMs: config.GRANTD_HEADERS_TIMEOUT * 1000,
  bodyTimeoutMs: config.GRANTD_BODY_TIMEOUT * 1000,
  keepAliveTimeoutMs: config.GRANTD_KEEP_ALIVE_TIMEOUT * 1000,
  maxConnections: config.GRANTD_MAX_CONNECTIONS,
  metricsToken: config.GRANTD_METRICS_TOKEN,
  publicUrl: publicUrl(config),
  accessTokenTtlSeconds: config.GRANTD_OAUTH_ACCESS_TTL,
});

/** The options of an environment that sets none of them. */
export const DEFAULT_HTTP_OPTIONS: HttpOptions = httpOptions(DEFAULT_CONFIG);

/** A duration as problems tell it: "20 s", "0.5 s". */
export const inSeconds = (ms: number): string => `${ms / 1000} s`;

/**
 * A router that matches paths exactly, as the app's own does (createApp): /V1/keys and /v1/keys/ are
 * no route (docs/api.md: any other path is 404). Express's routers are created with
 * neither by default, and a sub-router does not take the app's settings.
 */
export const exactRouter = (): Router => express.Router({ caseSensitive: true, strict: true });
