import type { GrantIndex } from '../engine/grant-index.ts';

/**
 * A tenant held in memory: its grants indexed and its agents' scope masks, which a check reads, and
 * how far they have followed the grant log. HeldTenants holds it, TenantLoader reads it, LogReplayer
 * brings it up to the log.
 */
export interface HeldTenant {
  readonly index: GrantIndex;
  /** Scope masks of the tenant's agents, by external id. */
  readonly agents: Map<string, string[]>;
  /** The oldest transaction running when the index last read the log (bigint as text): all below had finished. */
  horizon: string;
  /** Transactions at or above the horizon whose changes the index holds. */
  replayed: Set<string>;
  /** When the last catch-up (or the load) that succeeded began. */
  verifiedAt: number;
  /** The tenant's generation on this node when that catch-up began. */
  generation: number;
  /** When it was last used, and its uses then (each counting 1, halving every half-life: src/store/hold-policy.ts). */
  lastUsed: number;
  uses: number;
  /** The catch-up under way, and the generation it will have seen. */
  pending: { generation: number; done: Promise<boolean> } | null;
  /** A backlog is being replayed in slices: the held tenant is not whole. */
  replaying: boolean;
}
