import { loadConfig, type Config } from '../config.ts';

/** How the HTTP edge guards itself, from the GRANTD_* settings (README, "Operating it"). */
export interface HttpOptions {
  /** When set, GET /metrics needs `Authorization: Bearer <this token>`. */
  metricsToken: string | undefined;
}

export const httpOptions = (config: Config): HttpOptions => ({
  metricsToken: config.GRANTD_METRICS_TOKEN,
});

/** The options of an environment that sets none of them. */
export const DEFAULT_HTTP_OPTIONS: HttpOptions = httpOptions(loadConfig({}));
