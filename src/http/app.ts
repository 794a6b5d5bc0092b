import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createExpressEndpoints, initServer } from '@ts-rest/express';
import express, { type Express, type RequestHandler } from 'express';
import { contract } from '../../contract/index.ts';
import { packageRoot } from '../package-root.ts';
import type { AppDeps } from './context.ts';
import { withCompiledBody } from './compiled-bodies.ts';
import { consoleRouter } from './console.ts';
import { docsRouter } from './docs.ts';
import { DEFAULT_HTTP_OPTIONS, type HttpOptions } from './options.ts';
import { answerJsonAsIs } from './json-answers.ts';
import { authentication, bearerChallenge } from './middleware/authenticate.ts';
import { jsonBody } from './middleware/body.ts';
import { methodNotAllowed } from './middleware/methods.ts';
import { mcpEndpoint } from './mcp/endpoint.ts';
import { requireMetricsToken } from './middleware/metrics-token.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { errorHandler, notFound, validationProblem } from './middleware/errors.ts';
import { requestLog } from './middleware/request-log.ts';
import { traceRequests } from './middleware/trace.ts';
import { tracingOn } from '../tracing.ts';
import { setApiSecurityHeaders } from './middleware/security-headers.ts';
import { sendProblem } from './problem.ts';
import { agentRoutes } from './routes/agents.ts';
import { changeRoutes } from './routes/changes.ts';
import { checkRoutes } from './routes/check.ts';
import { grantRoutes } from './routes/grants.ts';
import { keyRoutes } from './routes/keys.ts';
import { namespaceRoutes } from './routes/namespaces.ts';
import { objectRoutes } from './routes/objects.ts';
import { subjectRoutes } from './routes/subjects.ts';
import { oauthClientRoutes } from './routes/oauth-clients.ts';
import { oauthRouter } from './oauth/server.ts';
import { withWriteObligations } from './write-obligations.ts';

const s = initServer();

export function createApp(deps: AppDeps, options: HttpOptions = DEFAULT_HTTP_OPTIONS): Express {
  const app = express();
  // Paths match exactly (docs/api.md: any other path is 404): set before the first route creates the router.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // req.ip is the peer's address, or with configured proxies the client X-Forwarded-For names.
  app.set('trust proxy', deps.trustProxy);
  answerJsonAsIs(app);
  if (tracingOn()) app.use(traceRequests);
  // One middleware for what every request gets, rather than one each: every layer of Express's router costs a request.
  const logRequest = requestLog(deps.logger);
  app.use((req, res, next) => {
    req.startedAt = performance.now();
    logRequest(req, res);
    deps.metrics.observe(req, res);
    setApiSecurityHeaders(res);
    next();
  });

  // ts-rest serves the API but the OAuth protocol routes, which oauthRouter below answers; a check's and
  // a bulk's bodies are checked by their schemas compiled first (zod's parse of 100 checks costs what
  // about 30 of the checks do; of one check, 1.4 KB of the 21 KB a check allocates).
  const served = {
    ...contract,
    check: withCompiledBody(contract.check),
    checkBulk: withCompiledBody(contract.checkBulk),
    oauth: { clients: contract.oauth.clients },
  };
  // The API first: a check, the hottest request, then matches without walking past the operator routes.
  const router = withWriteObligations(
    served,
    s.router(served, {
      ...checkRoutes(deps),
      objects: objectRoutes(deps),
      subjects: subjectRoutes(deps),
      grants: grantRoutes(deps),
      namespaces: namespaceRoutes(deps),
      agents: agentRoutes(deps),
      keys: keyRoutes(deps),
      changes: changeRoutes(deps),
      oauth: { clients: oauthClientRoutes(deps) },
    }),
    deps.announce,
  );
  // The key is checked before the body is read and again once it has arrived (a slow sender's key may be revoked meanwhile).
  const { authenticate, reauthenticate, refuseScope } = authentication(deps.keys, deps.freshness, deps.limits.authFailures, options.publicUrl);
  const perKey = deps.limits.perKey ? [rateLimit(deps.limits.perKey)] : [];
  const admission = [authenticate, ...perKey, jsonBody(options.bodyTimeoutMs), reauthenticate];
  createExpressEndpoints(served, router, app, { globalMiddleware: admission, requestValidationErrorHandler: validationProblem });
  // The MCP endpoint calls the same implementations, admitted as /v1 admits (docs/mcp.md).
  app.use(mcpEndpoint(deps, router, { middleware: admission as RequestHandler[], refuseScope }));

  app.use(oauthRouter(deps, { publicUrl: options.publicUrl, accessTtlSeconds: options.accessTokenTtlSeconds }));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/metrics', ...(options.metricsToken ? [requireMetricsToken(options.metricsToken)] : []), async (_req, res) => {
    let text: string;
    try {
      text = await deps.metrics.exposition();
    } catch {
      res.setHeader('Retry-After', '1');
      return sendProblem(res, 'unavailable', "the workers' metrics could not be gathered");
    }
    res.type(deps.metrics.registry.contentType).send(text);
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await deps.ready();
      res.json({ status: 'ready' });
    } catch {
      res.setHeader('Retry-After', '1');
      sendProblem(res, 'unavailable', 'the database is unreachable');
    }
  });
  const openapi = readFileSync(join(packageRoot(), 'generated', 'openapi.json'), 'utf8');
  app.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openapi);
  });
  app.use(docsRouter());
  app.use(consoleRouter(options.consoleDir));

  app.use(methodNotAllowed(contract));
  app.use(notFound);
  app.use(errorHandler(deps.logger, (req) => bearerChallenge(options.publicUrl, req)));
  return app;
}
