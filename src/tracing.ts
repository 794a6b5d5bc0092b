import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import pg from 'pg';

/**
 * OpenTelemetry traces (docs/configuration.md#traces). Spans are made through the API only; with no
 * SDK registered (OTEL_EXPORTER_OTLP_ENDPOINT unset) the API's tracer is a no-op and no SDK module is
 * ever loaded, so tracing costs the check path nothing measurable.
 */
export const tracer = trace.getTracer('grantd');

/** Whether spans are exported: set once the SDK is registered, before the app is built. */
let tracing = false;
export const tracingOn = (): boolean => tracing;

/** Runs `work` in a span named `name` (a child of the active one), recording a failure on it; just runs it when tracing is off. */
export function inSpan<T>(name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  if (!tracing) return work();
  return tracer.startActiveSpan(name, { attributes }, async (span: Span) => {
    try {
      return await work();
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The active context with the caller's W3C `traceparent`, so that a request's span joins the caller's trace. */
export const callerContext = (headers: Record<string, string | string[] | undefined>) => propagation.extract(context.active(), headers);

/** Ends the tracing started: the spans still buffered are sent first. */
export type StopTracing = () => Promise<void>;

/**
 * Starts exporting spans when OTEL_EXPORTER_OTLP_ENDPOINT (or its traces-only variant) is set, to
 * that OTLP/HTTP endpoint; the exporter reads the other OTEL_* settings itself. Undefined when off.
 */
export async function startTracingFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<StopTracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  return startTracing(new OTLPTraceExporter(), { batch: true });
}

/**
 * Registers the SDK as the API's tracer provider, exporting to `exporter` (batched, or each span as
 * it ends for tests), and traces every SQL statement of pg (Prisma's and the graph's pools alike).
 */
export async function startTracing(exporter: SpanExporter, { batch }: { batch: boolean }): Promise<StopTracing> {
  const [{ NodeTracerProvider, BatchSpanProcessor, SimpleSpanProcessor }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME || 'grantd' }),
    spanProcessors: [batch ? new BatchSpanProcessor(exporter) : new SimpleSpanProcessor(exporter)],
  });
  provider.register();
  const untrace = traceStatements();
  tracing = true;
  return async () => {
    tracing = false;
    untrace();
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  };
}

type Query = (this: pg.Client, ...args: unknown[]) => unknown;

/** The statement's text, whichever form pg was called with (a string, or a config object); never its values. */
const statementText = (first: unknown): string | undefined =>
  typeof first === 'string' ? first : typeof (first as { text?: unknown } | null)?.text === 'string' ? (first as { text: string }).text : undefined;

/**
 * Wraps pg's Client#query in a span per statement (`db.query.text` is the parameterised SQL, never
 * the values). Done by hand rather than with instrumentation-pg: that one hooks require(), which ESM
 * imports of pg pass by without a loader flag. Only while tracing is on; returns the undo.
 */
function traceStatements(): () => void {
  const prototype = pg.Client.prototype as unknown as { query: Query };
  const original = prototype.query;
  prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const text = statementText(args[0]);
    // A Submittable (a cursor) reports its end in its own way: left as it is.
    if (text === undefined || typeof (args[0] as { submit?: unknown }).submit === 'function') return original.apply(this, args);
    const span = tracer.startSpan(`pg ${text.trimStart().split(/\s/, 1)[0]!.toUpperCase()}`, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'postgresql', 'db.query.text': text },
    });
    const end = (error: unknown) => {
      if (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    };
    const callback = args.at(-1);
    // pg.Pool#query calls with a callback; Prisma's adapter and grantd's own code await a promise.
    if (typeof callback === 'function') {
      args[args.length - 1] = (error: unknown, result: unknown) => {
        end(error);
        (callback as (error: unknown, result: unknown) => void)(error, result);
      };
      return original.apply(this, args);
    }
    return (original.apply(this, args) as Promise<unknown>).then(
      (value) => {
        end(null);
        return value;
      },
      (error: unknown) => {
        end(error);
        throw error;
      },
    );
  };
  return () => {
    prototype.query = original;
  };
}
