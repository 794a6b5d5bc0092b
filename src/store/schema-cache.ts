import { FRESHNESS_MS } from '../config.ts';
import { RefreshingCache } from '../cache/refreshing-cache.ts';
import { CompiledSchema, type RelationDefinitions } from '../engine/schema.ts';
import type pg from 'pg';
import type { TenantWatch } from './change-watch.ts';

const NAMESPACES_VERSION_SQL = 'SELECT namespaces_version::text FROM tenants WHERE id = $1::uuid';
/** The version and the definitions it names, in one snapshot: [name, relations] pairs. */
const NAMESPACES_SQL = `
SELECT t.namespaces_version::text,
  coalesce((SELECT json_agg(json_build_array(n.name, n.relations)) FROM namespaces n WHERE n.tenant_id = t.id), '[]')
FROM tenants t WHERE t.id = $1::uuid`;

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

  /**
   * A reload first reads the version alone and keeps the schema held when it has not moved; a
   * first load, or one that finds it moved, reads the version with the definitions (one statement,
   * no Prisma: a tenant's first check waits for it).
   */
  private async load(tenantId: string, held: { version: bigint; schema: CompiledSchema } | undefined) {
    if (held !== undefined) {
      const { rows } = await this.pool.query<[string]>({
        name: 'grantd_namespaces_version',
        text: NAMESPACES_VERSION_SQL,
        values: [tenantId],
        rowMode: 'array',
      });
      if (rows[0] !== undefined && held.version === BigInt(rows[0][0])) return held;
    }
    const { rows } = await this.pool.query<[string, [string, RelationDefinitions | null][]]>({
      name: 'grantd_namespaces',
      text: NAMESPACES_SQL,
      values: [tenantId],
      rowMode: 'array',
    });
    const [version, definitions] = rows[0] ?? ['-1', []];
    return { version: BigInt(version), schema: new CompiledSchema(definitions.map(([name, relations]) => ({ name, relations }))) };
  }
}
