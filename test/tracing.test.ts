import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/http/app.ts';
import { inSpan, startTracing, startTracingFromEnv, tracingOn, type StopTracing } from '../src/tracing.ts';
import { client, DOCUMENT_NAMESPACE, newTenant, useServices } from './helpers.ts';

describe('with tracing off', () => {
  it('loads no SDK, makes no span, and installs nothing', async () => {
    expect(await startTracingFromEnv({})).toBeUndefined();
    expect(tracingOn()).toBe(false);
    // The API's own tracer, with no provider registered, records nothing.
    const span = trace.getTracer('grantd').startSpan('probe');
    expect(span.isRecording()).toBe(false);
    span.end();
    expect(await inSpan('grantd.check', {}, async () => 42)).toBe(42);
  });
});

describe('with tracing on', () => {
  const exporter = new InMemorySpanExporter();
  let stop: StopTracing;
  const services = useServices({ graphMemory: 0 });
  let api: ReturnType<typeof client>;
  let tenantId: string;

  beforeAll(async () => {
    stop = await startTracing(exporter, { batch: false });
    const tenant = await newTenant(services);
    tenantId = tenant.id;
    api = client(createApp(services), tenant.adminKey);
    await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
    await api.post('/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'document:q3' }).expect(201);
  });

  afterAll(async () => {
    await stop();
  });

  /** The spans of the one trace whose server span has the given route, once it has ended. */
  const traceOf = async (route: string): Promise<{ server: ReadableSpan; spans: ReadableSpan[] }> => {
    await expect.poll(() => exporter.getFinishedSpans().some((s) => s.name === route)).toBe(true);
    const server = exporter.getFinishedSpans().find((s) => s.name === route)!;
    const traceId = server.spanContext().traceId;
    return { server, spans: exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId) };
  };
  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

  it('makes a server span for a check, its check span a child, and the SQL statements below it', async () => {
    exporter.reset();
    // The caller's trace is continued.
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    await api
      .post('/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'document:q3' })
      .set('traceparent', `00-${callerTrace}-00f067aa0ba902b7-01`)
      .expect(200);
    const { server, spans } = await traceOf('POST /v1/check');
    expect(server.spanContext().traceId).toBe(callerTrace);
    expect(server.attributes).toMatchObject({ 'http.route': '/v1/check', 'http.response.status_code': 200, 'grantd.tenant': tenantId });
    const check = spans.find((s) => s.name === 'grantd.check')!;
    expect(parentOf(check)).toBe(server.spanContext().spanId);
    const statements = spans.filter((s) => s.attributes['db.system.name'] === 'postgresql');
    expect(statements.length).toBeGreaterThan(0);
    // The graph's statement runs inside the check; none records the values it was sent.
    expect(statements.some((s) => parentOf(s) === check.spanContext().spanId)).toBe(true);
    for (const s of statements) expect(JSON.stringify(s.attributes)).not.toContain('alice');
  });

  it('makes listing spans, and marks a problem answer with its type', async () => {
    exporter.reset();
    await api.get('/v1/objects?namespace=document&subject=user:alice&relation=viewer').expect(200);
    const { spans } = await traceOf('GET /v1/objects');
    expect(spans.map((s) => s.name)).toContain('grantd.list_objects');
    await api.get('/v1/grants?object=document:q3').expect(200);
    expect((await traceOf('GET /v1/grants')).spans.map((s) => s.name)).toContain('grantd.list_grants');
    await api.post('/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'nosuch:q3' }).expect(404);
    await expect
      .poll(() => exporter.getFinishedSpans().find((s) => s.attributes['http.response.status_code'] === 404)?.attributes['grantd.problem'])
      .toBe('namespace-not-found');
  });
});
