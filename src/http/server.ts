import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';
import { DEFAULT_HTTP_OPTIONS, inSeconds, type HttpOptions } from './options.ts';
import { problemBody } from './problem.ts';

/** How often Node looks for requests past their headers or request timeout (its default, 30 s, would let them run that much longer). */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/**
 * The HTTP server of an app (call it once per app), bounded by `options`. Express gives every
 * request and response its app's prototypes with `Object.setPrototypeOf`, and V8 costs more for
 * objects whose prototype changes after they are made. So the server makes its requests and
 * responses from classes whose prototypes are the app's, and Express's change is a no-op
 * (docs/decisions.md#requests-are-made-with-the-apps-prototypes).
 */
export function createHttpServer(app: Express, options: HttpOptions = DEFAULT_HTTP_OPTIONS): Server {
  class Request extends IncomingMessage {}
  class Response extends ServerResponse {}
  Object.setPrototypeOf(Request.prototype, app.request);
  Object.setPrototypeOf(Response.prototype, app.response);
  app.request = Request.prototype as Express['request'];
  app.response = Response.prototype as Express['response'];
  const server = createServer(
    {
      IncomingMessage: Request,
      ServerResponse: Response,
      headersTimeout: options.headersTimeoutMs,
      // The body's own deadline (in the body parser) answers first; this also bounds a body no route reads.
      requestTimeout: options.headersTimeoutMs + options.bodyTimeoutMs,
      keepAliveTimeout: options.keepAliveTimeoutMs,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    app,
  );
  capConnections(server, options.maxConnections);
  // Each connection's latest response, to tell whether the app has answered its request.
  const latest = new WeakMap<Socket, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => latest.set(req.socket, res));
  // Requests Node's parser refuses (oversized headers, malformed HTTP, too slow) never reach Express:
  // answer them as problems too, 400 `invalid-request` (not 431 or 408, statuses the API does not list).
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    // A request the app has answered already (a 401 before its body was read): another answer would
    // be a second one to it. One whose body the app is still reading gets this one, whichever of the
    // two deadlines fires first.
    if (!socket.writable || latest.get(socket)?.headersSent === true) return socket.destroy();
    const body = JSON.stringify(problemBody('invalid-request', clientErrorDetail(error, options)));
    const answer =
      'HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
    // Closed once written: a client still sending slowly would otherwise keep a half-closed socket.
    socket.end(answer, () => socket.destroy());
  });
  return server;
}

function clientErrorDetail(error: NodeJS.ErrnoException, options: HttpOptions): string {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'the request line and headers exceed 16 KiB';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return `the request did not arrive in time: its headers within ${inSeconds(options.headersTimeoutMs)}, its body within ${inSeconds(options.bodyTimeoutMs)} more`;
    default:
      return 'malformed HTTP request';
  }
}

/**
 * Closes each connection past `max` open ones at once, emitting 'drop' as Node does. Not Node's
 * `server.maxConnections`: in a cluster worker that hands the connection back to the primary, which
 * offers it again at once, and the primary spins while every worker is full
 * (docs/decisions.md#requests-have-time-limits-and-a-process-a-connection-cap).
 */
function capConnections(server: Server, max: number): void {
  let open = 0;
  server.on('connection', (socket: Socket) => {
    if (open >= max) {
      server.emit('drop', { remoteAddress: socket.remoteAddress, remotePort: socket.remotePort });
      return void socket.destroy();
    }
    open++;
    socket.once('close', () => open--);
  });
}
