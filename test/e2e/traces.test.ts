import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseUrl, uniqueName } from '../helpers.ts';
import { callGrantd, runGrantd, startServer, type RunningServer } from './serve.ts';

/** The built server exports its spans to an OTLP/HTTP collector when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
describe('grantd serve with OTEL_EXPORTER_OTLP_ENDPOINT', { timeout: 120_000 }, () => {
  let collector: Server;
  let server: RunningServer;
  const received: { path: string; type: string; body: Buffer }[] = [];

  beforeAll(async () => {
    collector = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    server = await startServer({ DATABASE_URL: databaseUrl(), OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' });
  }, 90_000);

  afterAll(async () => {
    await server?.stop();
    await new Promise((resolve) => collector?.close(resolve));
  });

  it('sends the spans of a check, the request and its SQL, to <endpoint>/v1/traces', async () => {
    const created = await runGrantd(['tenant', 'create', uniqueName('traced'), '--json'], { DATABASE_URL: databaseUrl() });
    const key = JSON.parse(created.stdout).key.secret as string;
    const answer = await callGrantd(server.baseUrl, key, 'POST', '/v1/check', { subject: 'user:a', relation: 'viewer', object: 'user:b' });
    expect(answer.status).toBe(200);
    await expect.poll(() => received.some((r) => r.path === '/v1/traces' && r.body.includes('POST /v1/check')), { timeout: 20_000 }).toBe(true);
    const exported = Buffer.concat(received.filter((r) => r.path === '/v1/traces').map((r) => r.body)).toString('latin1');
    expect(exported).toContain('grantd');
    expect(exported).toContain('grantd.check');
    expect(exported).toContain('postgresql');
  });
});
