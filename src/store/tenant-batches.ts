import DataLoader from 'dataloader';

/**
 * Per-tenant DataLoaders that gather the loads made in one turn of the event loop (setImmediate runs
 * after the poll phase has read every request that arrived together) into one call of `run`, and
 * those made until `ready` resolves for the tenant (the tenant can run a statement now): a batch
 * waiting for the database takes in the loads asked meanwhile.
 * A tenant's loader is dropped when its batch starts, so quiet tenants cost nothing.
 */
export class TenantBatches<K, V> {
  private readonly loaders = new Map<string, DataLoader<K, V>>();

  constructor(
    private readonly run: (tenantId: string, keys: readonly K[]) => Promise<V[]>,
    /** Resolves when a batch of the tenant may start; never rejects. */
    private readonly ready: (tenantId: string) => Promise<void> = () => Promise.resolve(),
  ) {}

  async load(tenantId: string, keys: readonly K[]): Promise<V[]> {
    let loader = this.loaders.get(tenantId);
    if (!loader) {
      const created = new DataLoader<K, V>(
        (batch) => {
          if (this.loaders.get(tenantId) === created) this.loaders.delete(tenantId);
          return this.run(tenantId, batch);
        },
        { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (dispatch) => setImmediate(() => void this.ready(tenantId).then(dispatch)) },
      );
      this.loaders.set(tenantId, created);
      loader = created;
    }
    const results = await loader.loadMany(keys);
    const failed = results.find((r): r is Error => r instanceof Error);
    if (failed) throw failed;
    return results as V[];
  }
}

/** The most loads one call of `run` carries: the most checks one statement carries. */
const MAX_BATCH = 1000;
