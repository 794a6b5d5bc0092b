import type pg from 'pg';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.ts';
import type { KeyVerifier } from '../auth/verifier.ts';
import type { Change } from '../cluster/changes.ts';
import type { AuthorizationEngine } from '../engine/engine.ts';
import type { Db } from '../store/db.ts';
import type { SchemaCache } from '../store/schema-cache.ts';
import type { HeldTenants } from '../store/held-tenants.ts';
import type { Freshness } from '../store/freshness.ts';
import type { Metrics } from './metrics.ts';
import type { Limits } from '../rate-limits.ts';

/** What the HTTP layer is built from. */
export interface AppDeps {
  db: Db;
  /** The pool under Prisma, for the statements sent past it (docs/development.md#the-sql). */
  pool: pg.Pool;
  /** Ends the loads of grants into memory under way and closes the database pools. */
  close: () => Promise<void>;
  metrics: Metrics;
  /** Per-key rate limits (none when GRANTD_RATE_LIMIT is unset) and failed authentications per client address. */
  limits: Limits;
  /** Express's `trust proxy`: the proxies whose X-Forwarded-For names the client (GRANTD_TRUST_PROXY); false for none. */
  trustProxy: number | string | false;
  engine: AuthorizationEngine;
  schemas: SchemaCache;
  /** The tenants held in memory, which answer checks when current. */
  heldTenants: HeldTenants;
  keys: KeyVerifier;
  /** Brings this process's caches to the state a read's Grantd-Consistency asks for. */
  freshness: Freshness;
  /** After a committed write: this process's caches forget what it changed, then every other worker's (resolves once they have). */
  announce: (change: Change) => Promise<void>;
  logger: Logger;
  /** Answers /readyz: resolves when the database answers. */
  ready: () => Promise<void>;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    id?: string;
    /** performance.now() when the app began the request: the request log and metrics time it from there. */
    startedAt?: number;
  }
}

/** The authenticated caller; routes run only after the authenticate middleware set it. */
export function principalOf(req: { principal?: Principal }): Principal {
  if (!req.principal) throw new Error('route reached without authentication');
  return req.principal;
}
