/**
 * The ceiling of grantd's HTTP layer: a bare Express 5 app (the project's express dependency) that
 * parses POST /v1/check's JSON body and answers a constant {"allowed": true} (and POST
 * /v1/check/bulk's, with one such result per check). Run as a child process by bench/servers.ts,
 * like grantd, so that it does not share the load generator's event loop; with WORKERS > 1 from
 * that many processes sharing the port through Node's cluster, as grantd's GRANTD_WORKERS does.
 * Served by grantd's own HTTP server (src/http/server.ts), so that the ceiling has grantd's HTTP
 * layer; with EXPRESS_SERVER=listen by stock `app.listen`, for reference (about 0.6x as fast).
 */
import cluster from 'node:cluster';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Express } from 'express';
import { createHttpServer } from '../src/http/server.ts';

/** The bare app; bench/check-alloc.ts serves it in its own process too. */
export function bareExpressApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json());
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.post('/v1/check', (_req, res) => {
    res.json({ allowed: true });
  });
  app.post('/v1/check/bulk', (req, res) => {
    res.json({ results: (req.body as { checks: unknown[] }).checks.map(() => ({ allowed: true })) });
  });
  return app;
}

function serve(): void {
  const app = bareExpressApp();
  const port = Number(process.env.PORT ?? 0);
  if (process.env.EXPRESS_SERVER === 'listen') app.listen(port, '127.0.0.1');
  else createHttpServer(app).listen(port, '127.0.0.1');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const workers = Number(process.env.WORKERS ?? 1);
  if (cluster.isPrimary && workers > 1) {
    for (let i = 0; i < workers; i++) cluster.fork();
    process.on('SIGTERM', () => {
      for (const worker of Object.values(cluster.workers ?? {})) worker?.kill();
      process.exit(0);
    });
  } else {
    serve();
  }
}
