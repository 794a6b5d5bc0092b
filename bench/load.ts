/**
 * Loading the dataset into grantd through its public API, and reading grantd's answers back for
 * the comparisons: namespaces, agents (POST /v1/agents), then every grant through
 * POST /v1/grants/batch, 1000 triples per call, a few calls in flight.
 */
import { request } from 'node:http';
import { NAMESPACES, type Dataset, type NamespaceDef, type Triple } from './dataset.ts';

export class Api {
  constructor(
    readonly url: string,
    readonly key: string,
  ) {}

  headers(): Record<string, string> {
    return { authorization: `Bearer ${this.key}`, 'content-type': 'application/json' };
  }

  /** `fresh`: over a connection of its own, so that a grantd with several workers hands it to the next one. */
  async call<T = unknown>(method: string, path: string, body?: unknown, { fresh = false } = {}): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const { status, text } = fresh ? await this.overNewConnection(method, path, payload) : await this.overPool(method, path, payload);
    if (status < 200 || status >= 300) throw new Error(`${method} ${path}: ${status} ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : null) as T;
  }

  /** The answer's status, whatever it is: for requests a server may refuse (the caller decides what a refusal means). */
  async status(method: string, path: string, body?: unknown): Promise<number> {
    return (await this.overPool(method, path, body === undefined ? undefined : JSON.stringify(body))).status;
  }

  private async overPool(method: string, path: string, payload: string | undefined): Promise<{ status: number; text: string }> {
    const res = await fetch(this.url + path, { method, headers: this.headers(), body: payload, signal: AbortSignal.timeout(120_000) });
    return { status: res.status, text: await res.text() };
  }

  private overNewConnection(method: string, path: string, payload: string | undefined): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const headers = { ...this.headers(), 'content-length': String(Buffer.byteLength(payload ?? '')) };
      const req = request(this.url + path, { method, headers, agent: false, timeout: 120_000 }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }
}

/**
 * An access token for the API key's tenant, as an OAuth client gets one (docs/oauth.md): a new
 * confidential client with `scopes`, then the client_credentials grant at the token endpoint, the
 * client authenticated by HTTP Basic with its id and secret form-urlencoded (RFC 6749 2.3.1).
 */
export async function clientCredentialsToken(api: Api, scopes: string[]): Promise<string> {
  const client = await api.call<{ client_id: string; client_secret: string }>('POST', '/v1/oauth/clients', {
    name: 'bench',
    type: 'confidential',
    scopes,
  });
  const basic = Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64');
  const res = await fetch(`${api.url}/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: scopes.join(' ') }).toString(),
  });
  const body = await res.text();
  if (!res.ok) throw new Error(`token endpoint answered ${res.status}: ${body.slice(0, 300)}`);
  return (JSON.parse(body) as { access_token: string }).access_token;
}

/** Runs `work` over `items` with at most `concurrency` in flight, in order of start. */
export async function pool<T>(items: Iterable<T>, concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  const iterator = items[Symbol.iterator]();
  let failed: unknown = null;
  const worker = async () => {
    for (let next = iterator.next(); !next.done && failed === null; next = iterator.next()) {
      try {
        await work(next.value);
      } catch (error) {
        failed ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  if (failed !== null) throw failed instanceof Error ? failed : new Error('pool work failed', { cause: failed });
}

/** The dataset's namespaces, agents and grants (`triples` and `namespaces`: the dataset's own unless given). */
export async function loadGrantd(
  api: Api,
  ds: Dataset,
  log: (line: string) => void,
  triples: Iterable<Triple> = ds.triples(),
  namespaces: NamespaceDef[] = NAMESPACES,
): Promise<{ grants: number; seconds: number }> {
  const started = performance.now();
  for (const ns of namespaces) await api.call('POST', '/v1/namespaces', ns);
  const agents = Array.from({ length: ds.sizes.agents }, (_, a) => a);
  await pool(agents, 8, async (a) => {
    await api.call('POST', '/v1/agents', { external_id: `a${a}`, owner: `user:u${ds.agentUser[a]}`, scope: ds.agentScope(a) });
  });
  const grants = await writeGrants(api, triples, log);
  return { grants, seconds: (performance.now() - started) / 1000 };
}

/** Writes the grants through POST /v1/grants/batch, 1000 a call, 4 calls in flight; returns how many. */
export async function writeGrants(api: Api, triples: Iterable<Triple>, log: (line: string) => void): Promise<number> {
  const started = performance.now();
  let grants = 0;
  let lastLog = started;
  await pool(inChunks(triples, 1000), 4, async (writes) => {
    const res = await api.call<{ written: number }>('POST', '/v1/grants/batch', { writes });
    if (res.written !== writes.length) throw new Error(`batch wrote ${res.written} of ${writes.length}`);
    grants += writes.length;
    if (performance.now() - lastLog > 15_000) {
      lastLog = performance.now();
      log(`  loaded ${grants} grants (${Math.round(grants / ((lastLog - started) / 1000))}/s)`);
    }
  });
  return grants;
}

/** Items in arrays of `size` (grantd's batch limit is 1000), lazily. */
function* inChunks<T>(items: Iterable<T>, size: number): Generator<T[]> {
  let chunk: T[] = [];
  for (const item of items) {
    chunk.push(item);
    if (chunk.length === size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * Sends each probe's check, each over a connection of its own so that every worker gets some, until
 * every worker holds the tenants' grants in memory (the grantd_graph_memory_grants gauge, which adds
 * the workers up, reaches workers x heldPerProcess): scenarios measure the steady state. Until then
 * PostgreSQL answers (a cold node is slower, not wrong). Returns the seconds it took, or null when
 * not held within the timeout.
 */
export async function holdInMemory(
  probes: { api: Api; check: Triple }[],
  workers: number,
  heldPerProcess: number,
  timeoutMs = 300_000,
): Promise<number | null> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    await Promise.all(
      probes.flatMap(({ api, check: { subject, relation, object } }) =>
        Array.from({ length: workers }, () => api.call('POST', '/v1/check', { subject, relation, object }, { fresh: true })),
      ),
    );
    const metrics = await (await fetch(`${probes[0]!.api.url}/metrics`)).text();
    const held = /^grantd_graph_memory_grants (\d+)/m.exec(metrics);
    if (held && Number(held[1]) >= workers * heldPerProcess) return (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return null;
}

/**
 * grantd's answers to the checks, one POST /v1/check each (16 in flight), and through check/bulk
 * (1000 a call). A failed request leaves null in its places; `failures` says why.
 */
export async function grantdAnswers(
  api: Api,
  checks: Triple[],
): Promise<{ single: (boolean | null)[]; bulk: (boolean | null)[]; failures: string[] }> {
  const failures: string[] = [];
  const single = new Array<boolean | null>(checks.length).fill(null);
  await pool(checks.keys(), 16, async (i) => {
    const { subject, relation, object } = checks[i]!;
    try {
      single[i] = (await api.call<{ allowed: boolean }>('POST', '/v1/check', { subject, relation, object })).allowed;
    } catch (error) {
      failures.push(String(error).slice(0, 300));
    }
  });
  const bulk = new Array<boolean | null>(checks.length).fill(null);
  for (let i = 0; i < checks.length; i += 1000) {
    const items = checks.slice(i, i + 1000).map(({ subject, relation, object }) => ({ subject, relation, object }));
    try {
      const res = await api.call<{ results: { allowed: boolean }[] }>('POST', '/v1/check/bulk', { checks: items });
      res.results.forEach((r, k) => (bulk[i + k] = r.allowed));
    } catch (error) {
      failures.push(String(error).slice(0, 300));
    }
  }
  return { single, bulk, failures };
}

export function objectsPath(subject: string, relation: string, limit: number, cursor?: string): string {
  const q = new URLSearchParams({ namespace: 'document', subject, relation, limit: String(limit) });
  if (cursor) q.set('cursor', cursor);
  return `/v1/objects?${q}`;
}

export function subjectsPath(object: string, relation: string, subjectNamespace: string, limit: number): string {
  return `/v1/subjects?${new URLSearchParams({ object, relation, subject_namespace: subjectNamespace, limit: String(limit) })}`;
}

interface Page {
  objects: string[];
  next_cursor: string | null;
}

/**
 * Walks a listing with pages of `limit`. Stops after `maxObjects` (when given) and returns the
 * cursors met on the way, so that deep pages can be requested later.
 */
export async function walkListing(
  api: Api,
  subject: string,
  relation: string,
  limit: number,
  maxObjects = Infinity,
): Promise<{ ids: string[]; cursors: string[]; complete: boolean }> {
  const ids: string[] = [];
  const cursors: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await api.call<Page>('GET', objectsPath(subject, relation, limit, cursor));
    ids.push(...page.objects);
    if (!page.next_cursor) return { ids, cursors, complete: true };
    cursor = page.next_cursor;
    cursors.push(cursor);
    if (ids.length >= maxObjects) return { ids, cursors, complete: false };
  }
}
