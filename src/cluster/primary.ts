import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';
import { isGrantdMessage, type PrimaryMessage, type WorkerMessage } from './protocol.ts';

/** Wait before replacing a worker that died, so that a crash loop does not spin. */
const RESTART_DELAY_MS = 1_000;
/**
 * A stopping worker closes its connections after its own grace of 7 s and gives up on its pools at
 * 8.5 s (src/cli/serve.ts); past this it is killed, which leaves the primary time to stop the
 * database within the node's 10 s.
 */
const STOP_TIMEOUT_MS = 9_000;
/**
 * V8 flags of every worker, and of `npm start`'s single process (package.json names them again, as
 * V8 takes them only as a process starts; a test keeps the two the same). V8's memory reducer
 * shrinks the heap with a full, compacting collection at the latest 100 s after the last one,
 * whatever the load: a long pause in every worker at once after they load a tenant together
 * (docs/decisions.md#no-memory-reducer). A young generation of up to 64 MB a semi-space lets the
 * objects of the requests under way die young instead of filling the old generation
 * (docs/decisions.md#a-young-generation-of-64-mb). The primary's own node flags come after these in a
 * worker's, so that an operator's (`node --max-semi-space-size=16 bin/grantd.js serve`) win: V8 takes a flag's last value.
 */
export const GRANTD_V8_FLAGS = ['--no-memory-reducer', '--max-semi-space-size=64'];

/**
 * The primary of `grantd serve` with GRANTD_WORKERS > 1. It serves no request: the workers share
 * the listening socket (Node's cluster hands connections out in turn). It relays each worker's
 * writes to the others and tells the writer once all of them have applied it, so that
 * read-after-write holds whichever worker the next request reaches. It holds the node's rate-limit
 * counters (rate-limiter-flexible's cluster master, which the workers' limiters ask), so that limits
 * without Redis are per node, and aggregates the workers' metrics.
 */
export class Primary {
  private readonly listening = new Set<number>();
  private readonly relays = new Map<number, { origin: Worker; id: number; waitingOn: Set<number> }>();
  private lastRelay = 0;
  private readonly aggregator = new AggregatorRegistry();
  private stopping = false;

  constructor(
    private readonly options: { workers: number; env: Record<string, string> },
    private readonly logger: Logger,
  ) {
    new RateLimiterClusterMaster(); // answers the workers' limiters from now on
  }

  /** Forks the workers; resolves with the port once every one listens, rejects if one dies first. */
  start(): Promise<number> {
    cluster.setupPrimary({ execArgv: [...GRANTD_V8_FLAGS, ...process.execArgv] });
    cluster.on('message', (worker, message: unknown) => {
      if (isGrantdMessage(message)) this.received(worker, message as WorkerMessage);
    });
    return new Promise((resolve, reject) => {
      let ready = false;
      cluster.on('listening', (worker, address) => {
        this.listening.add(worker.id);
        if (!ready && this.listening.size === this.options.workers) {
          ready = true;
          resolve(address.port);
        }
      });
      cluster.on('exit', (worker, code, signal) => {
        this.listening.delete(worker.id);
        for (const relay of this.relays.keys()) this.applied(relay, worker.id);
        if (this.stopping) return;
        if (!ready) {
          reject(new Error(`a worker exited (${signal ?? `code ${code}`}) before every worker listened`));
          return void this.stop();
        }
        this.logger.error({ worker: worker.id, code, signal }, 'worker died; starting another');
        setTimeout(() => this.stopping || this.fork(), RESTART_DELAY_MS);
      });
      for (let i = 0; i < this.options.workers; i++) this.fork();
    });
  }

  /** Stops every worker (each closes its server gracefully) and resolves once all have exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
    await Promise.all(
      workers.map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker.isDead()) return resolve();
            const killer = setTimeout(() => worker.process.kill('SIGKILL'), STOP_TIMEOUT_MS);
            worker.once('exit', () => {
              clearTimeout(killer);
              resolve();
            });
            worker.process.kill('SIGTERM');
          }),
      ),
    );
  }

  private fork(): void {
    cluster.fork(this.options.env);
  }

  private received(worker: Worker, message: WorkerMessage): void {
    switch (message.grantd) {
      case 'announce': {
        // Only workers that listen have answered anything; one still starting has nothing cached yet.
        const others = [...this.listening].filter((id) => id !== worker.id).map((id) => cluster.workers?.[id]);
        const reachable = others.filter((other): other is Worker => other?.isConnected() === true);
        if (reachable.length === 0) return this.send(worker, { grantd: 'reply', id: message.id });
        const relay = ++this.lastRelay;
        this.relays.set(relay, { origin: worker, id: message.id, waitingOn: new Set(reachable.map((other) => other.id)) });
        for (const other of reachable) this.send(other, { grantd: 'change', relay, change: message.change });
        return;
      }
      case 'applied':
        return this.applied(message.relay, worker.id);
      case 'metrics':
        this.aggregator.clusterMetrics().then(
          (text) => this.send(worker, { grantd: 'reply', id: message.id, value: text }),
          (error: Error) => this.send(worker, { grantd: 'reply', id: message.id, error: error.message }),
        );
    }
  }

  /** The worker has applied the relayed change, or is gone (with its caches). */
  private applied(relay: number, workerId: number): void {
    const pending = this.relays.get(relay);
    if (!pending?.waitingOn.delete(workerId) || pending.waitingOn.size > 0) return;
    this.relays.delete(relay);
    this.send(pending.origin, { grantd: 'reply', id: pending.id });
  }

  private send(worker: Worker, message: PrimaryMessage): void {
    // A worker that dies meanwhile leaves nothing to tell (its exit settles what waited on it).
    if (worker.isConnected()) worker.send(message, undefined, {}, () => undefined);
  }
}
