import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Change } from '../../src/cluster/changes.ts';
import type { WorkerMessage } from '../../src/cluster/protocol.ts';
import { PrimaryLink, type PrimaryChannel } from '../../src/cluster/worker.ts';

/** The worker's end of a cluster's IPC channel: what it sent, and a way to deliver the primary's messages. */
class FakeChannel extends EventEmitter implements PrimaryChannel {
  connected = true;
  readonly sent: WorkerMessage[] = [];
  send(message: WorkerMessage): boolean {
    this.sent.push(message);
    return true;
  }
  deliver(message: unknown): void {
    this.emit('message', message);
  }
}

const change: Change = { kind: 'grants', tenantId: 't1' };

describe("a worker's link to its primary", () => {
  let channel: FakeChannel;
  let applied: Change[];
  let link: PrimaryLink;
  beforeEach(() => {
    channel = new FakeChannel();
    applied = [];
    link = new PrimaryLink((received) => applied.push(received), channel);
  });
  afterEach(() => vi.useRealTimers());

  it('announces a write and resolves once the primary replies to that announcement', async () => {
    let settled = false;
    const announced = link.announce(change).then(() => (settled = true));
    expect(channel.sent).toEqual([{ grantd: 'announce', id: 1, change }]);
    channel.deliver({ grantd: 'reply', id: 2 });
    await Promise.resolve();
    expect(settled).toBe(false);
    channel.deliver({ grantd: 'reply', id: 1 });
    await announced;
    expect(settled).toBe(true);
  });

  it("resolves an announcement after a second without a reply: the others' caches expire by then", async () => {
    vi.useFakeTimers();
    let settled = false;
    const announced = link.announce(change).then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await announced;
    expect(settled).toBe(true);
  });

  it("applies another worker's change and acknowledges it by the relay's id", () => {
    channel.deliver({ grantd: 'change', relay: 7, change });
    expect(applied).toEqual([change]);
    expect(channel.sent).toEqual([{ grantd: 'applied', relay: 7 }]);
  });

  it("ignores messages that are not grantd's (prom-client and rate-limiter-flexible share the channel)", () => {
    for (const message of [null, 'text', { channel: 'prom' }, { grantd: 5 }]) channel.deliver(message);
    expect(applied).toEqual([]);
    expect(channel.sent).toEqual([]);
  });

  it("reaches the node's metrics, or fails with the primary's error, or after 5 s without a reply", async () => {
    vi.useFakeTimers();
    const first = link.metrics();
    channel.deliver({ grantd: 'reply', id: 1, value: 'grantd_up 1\n' });
    expect(await first).toBe('grantd_up 1\n');
    const second = link.metrics();
    channel.deliver({ grantd: 'reply', id: 2, error: 'aggregation failed' });
    await expect(second).rejects.toThrow('aggregation failed');
    await Promise.all([expect(link.metrics()).rejects.toThrow('the primary did not answer in time'), vi.advanceTimersByTimeAsync(5_000)]);
  });

  it('sends nothing once the channel is closed (the worker is stopping with its primary)', async () => {
    vi.useFakeTimers();
    channel.connected = false;
    const announced = link.announce(change);
    channel.deliver({ grantd: 'change', relay: 1, change });
    expect(channel.sent).toEqual([]);
    expect(applied).toEqual([change]);
    await vi.advanceTimersByTimeAsync(1_000);
    await announced;
  });
});
