import type { Change } from './changes.ts';

/**
 * The messages between the primary and its workers over Node's cluster IPC channel. A worker asks
 * (`id` is its own counter) and the primary replies with the same id; the primary relays a change
 * to the other workers, which acknowledge it by the relay's id.
 */
export type WorkerRequest = { grantd: 'announce'; id: number; change: Change } | { grantd: 'metrics'; id: number };

export type WorkerMessage = WorkerRequest | { grantd: 'applied'; relay: number };

export type PrimaryMessage = { grantd: 'reply'; id: number; value?: string; error?: string } | { grantd: 'change'; relay: number; change: Change };

export const isGrantdMessage = (message: unknown): message is { grantd: string } =>
  typeof message === 'object' && message !== null && typeof (message as { grantd?: unknown }).grantd === 'string';
