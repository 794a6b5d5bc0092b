import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { NextFunction, Request, Response } from 'express';
import { callerContext, tracer } from '../../tracing.ts';
import { shownPath } from '../shown-path.ts';

/**
 * A server span for each request, in the caller's trace when it sends `traceparent`; the route's
 * own spans (checks, listings, SQL) are its children. Installed only while tracing is on.
 */
export function traceRequests(req: Request, res: Response, next: NextFunction): void {
  const parent = callerContext(req.headers);
  const span = tracer.startSpan(
    req.method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method, 'url.path': shownPath(req.path) } },
    parent,
  );
  res.on('finish', () => {
    const route = (req.route as { path?: unknown } | undefined)?.path;
    if (typeof route === 'string') {
      span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.route', route);
    }
    span.setAttribute('http.response.status_code', res.statusCode);
    if (req.principal) span.setAttribute('grantd.tenant', req.principal.tenantId);
    if (res.statusCode >= 400 && res.locals.problemType) span.setAttribute('grantd.problem', res.locals.problemType as string);
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  context.with(trace.setSpan(parent, span), next);
}
