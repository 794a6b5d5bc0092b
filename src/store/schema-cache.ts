import { FRESHNESS_MS } from '../config.ts';
import { RefreshingCache } from '../cache/refreshing-cache.ts';
import { CompiledSchema } from '../engine/schema.ts';
import type pg from 'pg';
import type { TenantWatch } from './change-watch.ts';
import type { Db } from './db.ts';
import { namespaceDefinitions } from './namespaces.ts';

const NAMESPACES_VERSION_SQL = 'SELECT namespaces_version::text FROM tenants WHERE id = $1::uuid';

/**
 * Compiled namespaces per tenant, used for at most `maxAgeMs` (reloaded ahead, off the request
 * path, under steady traffic) or while the change watch vouches that nothing of the tenant changed,
 * and forgotten on this node's own writes; at most `maxTenants` are held, the least recently used
 * going first. A reload first reads the tenant's definitions version
 * (bumped by every statement that changes its namespaces) and keeps the schema it holds when that
 * has not moved: a definition is compiled, and indexed by the grants held in memory, once per
 * version, not at every reload.
 */
export class SchemaCache {
  private readonly cache: RefreshingCache<string, { version: bigint; schema: CompiledSchema }>;

  constructor(
    private readonly db: Db,
    /** The pool under Prisma: the version every reload reads is a named statement on it (as findKey's, src/store/keys.ts). */
    private readonly pool: pg.Pool,
    {
      maxAgeMs = FRESHNESS_MS,
      maxTenants = 10_000,
      watch,
    }: {
      maxAgeMs?: number;
      maxTenants?: number;
      /** Vouches that a tenant's namespaces have not changed since its load: the schema is then used past `maxAgeMs`. */
      watch?: TenantWatch;
    } = {},
  ) {
    this.cache = new RefreshingCache(
      (tenantId, held) => this.load(tenantId, held),
      maxAgeMs,
      maxTenants,
      undefined,
      (tenantId, _schema, loadedAt) => watch?.covers(tenantId, loadedAt) === true,
    );
  }

  /** The tenant's schema, loaded less than `maxAgeMs` ago (default: the cache's). */
  async get(tenantId: string, options?: { maxAgeMs?: number }): Promise<CompiledSchema> {
    return (await this.cache.get(tenantId, options))!.schema;
  }

  /** The tenant's schema when it is at hand and fresh, with no promise to wait for; else undefined (then `get`). */
  getNow(tenantId: string): CompiledSchema | undefined {
    return this.cache.loadedNow(tenantId)?.schema;
  }

  invalidate(tenantId: string): void {
    this.cache.delete(tenantId);
  }

  private async load(tenantId: string, held: { version: bigint; schema: CompiledSchema } | undefined) {
    // The version before the definitions: definitions read after it are at least as new, so a
    // pair that is off is one the next reload corrects, never one that sticks.
    const { rows } = await this.pool.query<[string]>({
      name: 'grantd_namespaces_version',
      text: NAMESPACES_VERSION_SQL,
      values: [tenantId],
      rowMode: 'array',
    });
    const version = rows[0] ? BigInt(rows[0][0]) : -1n;
    if (held?.version === version) return held;
    return { version, schema: new CompiledSchema(await namespaceDefinitions(this.db, tenantId)) };
  }
}
