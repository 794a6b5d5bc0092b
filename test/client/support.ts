import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { useServices } from '../helpers.ts';

async function listen(handler: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}` };
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** The real grantd app on a real socket of 127.0.0.1 (for the file's tests), with its services. */
export function useRealServer() {
  const services = useServices();
  const state = { url: '' };
  let server: Server | undefined;
  beforeAll(async () => {
    const app = createApp(services);
    ({ server, url: state.url } = await listen(app));
  });
  afterAll(async () => {
    if (server) await close(server);
  });
  return {
    services,
    /** Base URL of the server, once beforeAll ran. */
    get url() {
      return state.url;
    },
  };
}

export interface Attempt {
  n: number;
  method: string;
  path: string;
  body: string;
  at: number;
}

export type FaultHandler = (req: IncomingMessage, res: ServerResponse, attempt: Attempt) => void;

/**
 * A node:http server whose every request is answered by the handler set for the current test,
 * recording each request received (its number, method, path, body and arrival time). Every
 * response closes its connection.
 */
export function useFaultServer() {
  let handler: FaultHandler = (_req, res) => res.writeHead(500).end();
  const attempts: Attempt[] = [];
  const state = { url: '' };
  let server: Server | undefined;
  beforeAll(async () => {
    ({ server, url: state.url } = await listen((req, res) => {
      // One request per connection, so that no attempt lands on a socket an earlier test broke.
      res.setHeader('connection', 'close');
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const attempt = { n: attempts.length + 1, method: req.method ?? '', path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        attempts.push(attempt);
        handler(req, res, attempt);
      });
    }));
  });
  afterAll(async () => {
    if (server) await close(server);
  });
  return {
    get url() {
      return state.url;
    },
    attempts,
    /** Sets how requests are answered from now on, and forgets the requests received so far. */
    reply(next: FaultHandler) {
      handler = next;
      attempts.length = 0;
    },
  };
}

/** Sends a problem document like grantd's. */
export function problem(res: ServerResponse, status: number, type: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/problem+json', ...headers });
  res.end(JSON.stringify({ type, title: type, status, detail: `injected ${status}` }));
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** Closes the connection without any response (the client sees a reset / "other side closed"). */
export function reset(req: IncomingMessage): void {
  req.socket.destroy();
}

/** Runs `fn` and returns what it threw (failing if it did not throw) and how long it took. */
export async function failure(fn: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await fn();
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  throw new Error('expected the call to fail');
}
