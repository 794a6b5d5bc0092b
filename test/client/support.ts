import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { listen, useServices } from '../helpers.ts';

/** The real grantd app on a real socket of 127.0.0.1 (for the file's tests), with its services. */
export function useRealServer() {
  const services = useServices();
  const state = { url: '' };
  let server: Awaited<ReturnType<typeof listen>> | undefined;
  beforeAll(async () => {
    server = await listen(createApp(services));
    state.url = server.baseUrl;
  });
  afterAll(async () => {
    await server?.close();
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
  let server: Awaited<ReturnType<typeof listen>> | undefined;
  beforeAll(async () => {
    server = await listen((req, res) => {
      // One request per connection, so that no attempt lands on a socket an earlier test broke.
      res.setHeader('connection', 'close');
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const attempt = {
          n: attempts.length + 1,
          method: req.method ?? '',
          path: req.url ?? '',
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        attempts.push(attempt);
        handler(req, res, attempt);
      });
    });
    state.url = server.baseUrl;
  });
  afterAll(async () => {
    await server?.close();
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
