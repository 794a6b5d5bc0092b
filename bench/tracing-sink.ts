/**
 * Issue 26's peer (bench/README.md, `check_tracing_off`): a local OTLP/HTTP endpoint for a grantd
 * with tracing on. It answers 200 to every POST and keeps only counts of the spans received (by
 * kind, and those of a followed probe trace apart), so that the run proves spans were exported and can
 * count how many spans of each kind one check makes.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { Api } from './load.ts';
import type { Triple } from './dataset.ts';

/** OTLP's span kinds (the API's SpanKind + 1). */
const KIND_NAMES: Record<number, string> = { 1: 'internal', 2: 'server', 3: 'client', 4: 'producer', 5: 'consumer' };

/** The part of OTLP/HTTP's JSON export request (the exporter grantd uses sends JSON) the sink reads. */
interface ExportRequest {
  resourceSpans?: { scopeSpans?: { spans?: { traceId?: string; kind?: number }[] }[] }[];
}

export interface TracingSink {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for grantd: the exporter posts to `<url>/v1/traces`. */
  url: string;
  /** Spans received so far, by kind. */
  spans: () => Record<string, number>;
  /** From now on, counts the spans of trace `traceId` apart; reads those received so far, by kind. */
  follow: (traceId: string) => () => Record<string, number>;
  /** Export requests of a followed trace that could not be read as OTLP JSON. */
  unreadable: () => number;
  close: () => Promise<void>;
}

export async function startTracingSink(): Promise<TracingSink> {
  const all: Record<string, number> = {};
  const byTrace = new Map<string, Record<string, number>>();
  let unreadable = 0;
  const count = (into: Record<string, number>, kind: string) => (into[kind] = (into[kind] ?? 0) + 1);
  const kindName = (kind: number) => KIND_NAMES[kind] ?? `kind ${kind}`;
  // A span's only "kind" key (attributes are {"key": ..., "value": ...}): counted without parsing
  // the export, which would cost the shared cores more than the traced grantd's own work does.
  const receive = (body: string) => {
    for (const [, kind] of body.matchAll(/"kind":(\d+)/g)) count(all, kindName(Number(kind)));
    const followed = [...byTrace.keys()].filter((traceId) => body.includes(traceId));
    if (followed.length === 0) return;
    const request = JSON.parse(body) as ExportRequest;
    if (!Array.isArray(request.resourceSpans)) throw new Error('not an OTLP export');
    for (const { scopeSpans = [] } of request.resourceSpans)
      for (const { spans = [] } of scopeSpans)
        for (const { traceId = '', kind = 0 } of spans) {
          const ofTrace = byTrace.get(traceId);
          if (ofTrace) count(ofTrace, kindName(kind));
        }
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        receive(Buffer.concat(chunks).toString('utf8'));
      } catch {
        unreadable++;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => ({ ...all }),
    follow: (traceId) => {
      const ofTrace: Record<string, number> = {};
      byTrace.set(traceId, ofTrace);
      return () => ({ ...ofTrace });
    },
    unreadable: () => unreadable,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Spans of each kind one check makes: `checks` sent one after another to the traced grantd, each
 * as a part of one probe trace (W3C traceparent), and the spans of that trace counted once the
 * batch exporter has sent them all (one server span a check). Internal spans are inSpan's: with
 * tracing off, each is one test of the switch in the check's path.
 */
export async function spansPerCheck(sink: TracingSink, api: Api, checks: Triple[], timeoutMs = 30_000): Promise<Record<string, number>> {
  const traceId = randomBytes(16).toString('hex');
  const received = sink.follow(traceId);
  for (const { subject, relation, object } of checks) {
    const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
    const res = await fetch(`${api.url}/v1/check`, {
      method: 'POST',
      headers: { ...api.headers(), traceparent },
      body: JSON.stringify({ subject, relation, object }),
    });
    if (!res.ok) throw new Error(`probe check: ${res.status} ${(await res.text()).slice(0, 300)}`);
  }
  const started = performance.now();
  while ((received().server ?? 0) < checks.length) {
    if (performance.now() - started > timeoutMs)
      throw new Error(`the sink got ${received().server ?? 0} of ${checks.length} probe checks' server spans in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return Object.fromEntries(Object.entries(received()).map(([kind, n]) => [kind, n / checks.length]));
}
