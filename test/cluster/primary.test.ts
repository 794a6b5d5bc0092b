import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Change } from '../../src/cluster/changes.ts';
import type { PrimaryMessage } from '../../src/cluster/protocol.ts';
import { packageRoot } from '../../src/package-root.ts';

/** A worker as Node's cluster shows it to the primary: its end of the IPC channel records what it was sent. */
class FakeWorker extends EventEmitter {
  readonly sent: PrimaryMessage[] = [];
  connected = true;
  dead = false;
  readonly process = { kill: vi.fn((signal: string) => signal === 'SIGTERM' && queueMicrotask(() => this.exit(0, null))) };
  constructor(readonly id: number) {
    super();
  }
  isConnected = () => this.connected;
  isDead = () => this.dead;
  send(message: PrimaryMessage): boolean {
    this.sent.push(message);
    return true;
  }
  exit(code: number | null, signal: string | null): void {
    this.dead = true;
    this.connected = false;
    delete fakeCluster.workers[this.id];
    this.emit('exit', code, signal);
    fakeCluster.emit('exit', this, code, signal);
  }
}

/** Node's cluster module in the primary: forks are fake workers, events are emitted by the test. */
const fakeCluster = Object.assign(new EventEmitter(), {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- without it the type is {}, which tsc cannot index
  workers: {} as Record<number, FakeWorker>,
  lastId: 0,
  setupPrimary: vi.fn(),
  fork: vi.fn(),
});
// Read when primary.ts is imported below, once fakeCluster exists.
vi.mock('node:cluster', () => ({ default: fakeCluster }));
vi.mock('rate-limiter-flexible', () => ({ RateLimiterClusterMaster: class {} }));
const { GRANTD_V8_FLAGS, Primary } = await import('../../src/cluster/primary.ts');

const change: Change = { kind: 'namespaces', tenantId: 't1' };
const worker = (id: number): FakeWorker => fakeCluster.workers[id]!;

/** A primary of `workers` workers, every one listening. */
async function started(workers: number) {
  const primary = new Primary({ workers, env: {} }, pino({ level: 'silent' }));
  const port = primary.start();
  for (let id = 1; id <= workers; id++) fakeCluster.emit('listening', worker(id), { port: 8080 });
  expect(await port).toBe(8080);
  return primary;
}

describe("a node's primary", () => {
  beforeEach(() => {
    fakeCluster.removeAllListeners();
    fakeCluster.workers = {};
    fakeCluster.lastId = 0;
    // Each test counts its own forks.
    fakeCluster.fork.mockClear();
    fakeCluster.setupPrimary.mockClear();
    fakeCluster.fork.mockImplementation(() => {
      const forked = new FakeWorker(++fakeCluster.lastId);
      fakeCluster.workers[forked.id] = forked;
      return forked;
    });
  });
  afterEach(() => vi.useRealTimers());

  it("gives its workers grantd's V8 flags, then its own node flags, whose values V8 takes over grantd's", () => {
    void new Primary({ workers: 1, env: {} }, pino({ level: 'silent' })).start();
    expect(fakeCluster.setupPrimary).toHaveBeenCalledWith({ execArgv: [...GRANTD_V8_FLAGS, ...process.execArgv] });
  });

  it('resolves with the port once every worker listens', async () => {
    const primary = new Primary({ workers: 2, env: { DATABASE_URL: 'postgres://db' } }, pino({ level: 'silent' }));
    let port: number | undefined;
    void primary.start().then((p) => (port = p));
    expect(fakeCluster.fork).toHaveBeenCalledWith({ DATABASE_URL: 'postgres://db' });
    fakeCluster.emit('listening', worker(1), { port: 8080 });
    await Promise.resolve();
    expect(port).toBeUndefined();
    fakeCluster.emit('listening', worker(2), { port: 8080 });
    await vi.waitFor(() => expect(port).toBe(8080));
  });

  it('fails to start when a worker exits before every worker listens', async () => {
    const primary = new Primary({ workers: 2, env: {} }, pino({ level: 'silent' }));
    const port = primary.start();
    worker(1).exit(1, null);
    await expect(port).rejects.toThrow('a worker exited (code 1) before every worker listened');
  });

  it("relays a worker's change to the others and replies to it once all have applied it", async () => {
    await started(3);
    fakeCluster.emit('message', worker(1), { grantd: 'announce', id: 7, change });
    expect(worker(2).sent).toEqual([{ grantd: 'change', relay: 1, change }]);
    expect(worker(3).sent).toEqual([{ grantd: 'change', relay: 1, change }]);
    fakeCluster.emit('message', worker(2), { grantd: 'applied', relay: 1 });
    fakeCluster.emit('message', worker(2), { grantd: 'applied', relay: 1 }); // told twice: counted once
    expect(worker(1).sent).toEqual([]);
    fakeCluster.emit('message', worker(3), { grantd: 'applied', relay: 1 });
    expect(worker(1).sent).toEqual([{ grantd: 'reply', id: 7 }]);
  });

  it('replies at once to a worker with no other listening', async () => {
    await started(1);
    fakeCluster.emit('message', worker(1), { grantd: 'announce', id: 3, change });
    expect(worker(1).sent).toEqual([{ grantd: 'reply', id: 3 }]);
  });

  it('counts a worker that dies as having applied what it was sent (its caches died with it), and starts another a second later', async () => {
    vi.useFakeTimers();
    await started(3);
    fakeCluster.emit('message', worker(1), { grantd: 'announce', id: 4, change });
    fakeCluster.emit('message', worker(2), { grantd: 'applied', relay: 1 });
    worker(3).exit(null, 'SIGKILL');
    expect(worker(1).sent).toEqual([{ grantd: 'reply', id: 4 }]);
    expect(fakeCluster.fork).toHaveBeenCalledTimes(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fakeCluster.fork).toHaveBeenCalledTimes(4);
  });

  it('does not relay to a worker whose channel is closed, nor send to one', async () => {
    await started(2);
    worker(2).connected = false;
    fakeCluster.emit('message', worker(1), { grantd: 'announce', id: 5, change });
    expect(worker(2).sent).toEqual([]);
    expect(worker(1).sent).toEqual([{ grantd: 'reply', id: 5 }]);
  });

  it("ignores messages that are not grantd's", async () => {
    await started(2);
    fakeCluster.emit('message', worker(1), { type: 'prom-client:getMetricsReq' });
    expect([worker(1).sent, worker(2).sent]).toEqual([[], []]);
  });

  it('stops every worker with SIGTERM, resolves once all exited, and starts none again', async () => {
    vi.useFakeTimers();
    const primary = await started(2);
    const workers = [worker(1), worker(2)];
    await primary.stop();
    for (const stopped of workers) expect(stopped.process.kill).toHaveBeenCalledWith('SIGTERM');
    await vi.advanceTimersByTimeAsync(20_000);
    expect(fakeCluster.fork).toHaveBeenCalledTimes(2);
    for (const stopped of workers) expect(stopped.process.kill).not.toHaveBeenCalledWith('SIGKILL');
  });

  it('kills a worker that has not exited 9 s after SIGTERM', async () => {
    vi.useFakeTimers();
    const primary = await started(1);
    const stubborn = worker(1);
    stubborn.process.kill.mockImplementation((signal: string) => signal === 'SIGKILL' && queueMicrotask(() => stubborn.exit(0, 'SIGKILL')));
    const stopped = primary.stop();
    await vi.advanceTimersByTimeAsync(8_999);
    expect(stubborn.process.kill).not.toHaveBeenCalledWith('SIGKILL');
    await vi.advanceTimersByTimeAsync(1);
    await stopped;
    expect(stubborn.process.kill).toHaveBeenCalledWith('SIGKILL');
  });
});

describe('GRANTD_V8_FLAGS', () => {
  // V8 takes heap flags only as a process starts, so `npm start`'s command line names them again.
  it("are the flags `npm start` gives its single process's node", () => {
    const { scripts } = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { scripts: { start: string } };
    const flags = /\bnode((?: --\S+)*) bin\/grantd\.js\b/.exec(scripts.start)?.[1];
    expect(flags?.trim().split(' ')).toEqual(GRANTD_V8_FLAGS);
  });
});
