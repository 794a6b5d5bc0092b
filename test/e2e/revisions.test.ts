import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { databaseUrl } from '../helpers.ts';
import { callGrantd, GRANTD_BIN, startServer, useTwoNodes, type RunningServer } from './serve.ts';

/**
 * Revisions across processes (docs/consistency.md#revisions): node A (one process) and node B
 * (GRANTD_WORKERS=2, each connection to the next worker) on one database, built servers on sockets.
 */
describe('revisions across nodes and workers', { timeout: 180_000 }, () => {
  const nodes = useTwoNodes('revisions', { GRANTD_WORKERS: '2' });

  beforeAll(async () => {
    expect((await callGrantd(nodes.a.baseUrl, nodes.key, 'POST', '/v1/namespaces', { name: 'doc' })).status).toBe(201);
  });

  const atLeast = (revision: string) => ({ 'Grantd-Consistency': `at-least ${revision}` });
  const check = (node: RunningServer, object: string, revision: string) =>
    callGrantd(node.baseUrl, nodes.key, 'POST', '/v1/check', { subject: 'user:r', relation: 'viewer', object }, atLeast(revision));

  /** The tenant's feed after `after`, read to its end (a transaction open elsewhere holds it back: polled until `count` come). */
  async function feed(node: RunningServer, after: string | undefined, count: number) {
    const started = Date.now();
    for (;;) {
      const changes: Record<string, unknown>[] = [];
      let next = after;
      for (;;) {
        const res = await callGrantd(node.baseUrl, nodes.key, 'GET', `/v1/changes?limit=7${next ? `&after=${encodeURIComponent(next)}` : ''}`);
        expect(res.status).toBe(200);
        changes.push(...(res.body.changes as Record<string, unknown>[]));
        next = res.body.next_revision as string;
        if (res.body.changes.length < 7) break;
      }
      if (changes.length >= count || Date.now() - started > 10_000) return { changes, next: next };
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  it('a write on one node, then a read at least its revision on the other, hundreds of times: never stale', async () => {
    const { a, b, key } = nodes;
    for (let i = 0; i < 150; i++) {
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      const object = `doc:s${i % 10}`;
      // The reader holds the answer before the write (in memory, or in its answer cache).
      const before = (await callGrantd(reader.baseUrl, key, 'POST', '/v1/check', { subject: 'user:r', relation: 'viewer', object })).body.allowed;
      const grant = { subject: 'user:r', relation: 'viewer', object };
      const written = before
        ? await callGrantd(writer.baseUrl, key, 'DELETE', '/v1/grants', grant)
        : await callGrantd(writer.baseUrl, key, 'POST', '/v1/grants', grant);
      const revision = written.headers['grantd-revision'] as string;
      expect(revision).toEqual(expect.any(String));
      const read = await check(reader, object, revision);
      expect(read.status).toBe(200);
      expect(read.body.allowed, `round ${i}`).toBe(!before);
    }
  });

  it("concurrent writers on several connections: the feed shows each change once, in each writer's order", async () => {
    const { a, b, key } = nodes;
    const { next: start } = await feed(a, undefined, 0);
    const writers = 4;
    const each = 20;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let j = 0; j < each; j++) {
          const node = (w + j) % 2 === 0 ? a : b;
          const res = await callGrantd(node.baseUrl, key, 'POST', '/v1/grants', { subject: `user:w${w}`, relation: 'viewer', object: `doc:c${j}` });
          expect(res.status).toBe(201);
        }
      }),
    );
    const { changes } = await feed(b, start, writers * each);
    const written = changes.filter((c) => c.kind === 'grant' && /^user:w\d$/.test(c.subject as string));
    expect(written).toHaveLength(writers * each);
    expect(new Set(written.map((c) => `${c.subject as string} ${c.object as string}`)).size).toBe(writers * each);
    for (let w = 0; w < writers; w++) {
      const order = written.filter((c) => c.subject === `user:w${w}`).map((c) => c.object);
      expect(order).toEqual(Array.from({ length: each }, (_, j) => `doc:c${j}`));
    }
    expect(new Set(changes.map((c) => c.revision)).size).toBe(changes.length);
  });

  it('a node restarted mid-feed, and `grantd changes --follow` restarted with --after: no gap, no repeat', async () => {
    const { b, key } = nodes;
    const { next: start } = await feed(nodes.a, undefined, 0);
    const write = (node: RunningServer, i: number) =>
      callGrantd(node.baseUrl, key, 'POST', '/v1/grants', { subject: 'user:f', relation: 'viewer', object: `doc:f${i}` });
    for (let i = 0; i < 10; i++) expect((await write(nodes.a, i)).status).toBe(201);

    // A follower on node A prints the first changes, then stops with its node.
    const printed: Record<string, unknown>[] = [];
    const follow = (node: RunningServer, after: string) => {
      const child = spawn(process.execPath, [GRANTD_BIN, 'changes', '--follow', '--limit', '3', '--after', after], {
        env: { PATH: process.env.PATH ?? '', GRANTD_URL: node.baseUrl, GRANTD_KEY: key },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let pending = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) printed.push(JSON.parse(line) as Record<string, unknown>);
      });
      return child;
    };
    let follower = follow(nodes.a, start);
    await expect.poll(() => printed.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(10);
    follower.kill();
    await nodes.a.stop();
    for (let i = 10; i < 20; i++) expect((await write(b, i)).status).toBe(201);
    nodes.a = await startServer({ DATABASE_URL: databaseUrl() });
    for (let i = 20; i < 25; i++) expect((await write(nodes.a, i)).status).toBe(201);

    // Resumed after the last revision it printed, on the restarted node.
    follower = follow(nodes.a, printed.at(-1)!.revision as string);
    await expect.poll(() => printed.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(25);
    follower.kill();
    expect(printed.map((c) => c.object)).toEqual(Array.from({ length: 25 }, (_, i) => `doc:f${i}`));
    expect(new Set(printed.map((c) => c.revision)).size).toBe(25);
  });
});
