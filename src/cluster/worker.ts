import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Change } from './changes.ts';
import { isGrantdMessage, type PrimaryMessage, type WorkerMessage, type WorkerRequest } from './protocol.ts';

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
type Request = WithoutId<WorkerRequest>;
type Reply = Extract<PrimaryMessage, { grantd: 'reply' }>;

/** The worker's end of the IPC channel to its primary: this process, or a test's double. */
export interface PrimaryChannel {
  readonly connected: boolean;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  send?(message: WorkerMessage, sendHandle: undefined, options: object, callback: (error: Error | null) => void): boolean;
}

/** How long a write waits for the other workers to acknowledge it (they forget their caches within FRESHNESS_MS anyway). */
const ANNOUNCE_TIMEOUT_MS = 1_000;
const METRICS_TIMEOUT_MS = 5_000;

/**
 * A worker's side of the cluster: announces this worker's writes to the others through the primary,
 * applies theirs as they arrive, and reaches the node-wide metrics the primary gathers.
 */
export class PrimaryLink {
  private lastId = 0;
  private readonly waiting = new Map<number, (reply: Reply | null) => void>();

  constructor(
    applyChange: (change: Change) => void,
    private readonly channel: PrimaryChannel = process,
  ) {
    channel.on('message', (message: unknown) => {
      if (!isGrantdMessage(message)) return;
      const received = message as PrimaryMessage;
      if (received.grantd === 'change') {
        applyChange(received.change);
        this.send({ grantd: 'applied', relay: received.relay });
      } else if (received.grantd === 'reply') {
        this.waiting.get(received.id)?.(received);
      }
    });
  }

  /** Resolves once every other worker has applied the change (or after a second: their caches expire by then). */
  async announce(change: Change): Promise<void> {
    await this.ask({ grantd: 'announce', change }, ANNOUNCE_TIMEOUT_MS);
  }

  /** The Prometheus exposition of every worker, aggregated by the primary. */
  async metrics(): Promise<string> {
    const reply = await this.ask({ grantd: 'metrics' }, METRICS_TIMEOUT_MS);
    if (typeof reply?.value !== 'string') throw new Error(reply?.error ?? 'the primary did not answer in time');
    return reply.value;
  }

  /** Null when the primary did not reply in time. */
  private ask(request: Request, timeoutMs: number): Promise<Reply | null> {
    const id = ++this.lastId;
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle(null), timeoutMs);
      const settle = (reply: Reply | null) => {
        clearTimeout(timer);
        this.waiting.delete(id);
        resolve(reply);
      };
      this.waiting.set(id, settle);
      this.send({ ...request, id });
    });
  }

  private send(message: WorkerMessage): void {
    // Gone only while this worker is being stopped with its primary: nothing is left to tell.
    if (this.channel.connected) this.channel.send!(message, undefined, {}, () => undefined);
  }
}

/** Lets the primary gather this worker's metrics (prom-client's cluster protocol) for GET /metrics. */
export function shareMetrics(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // answers the primary's requests from now on
}
