// The `api` function the ts-rest client sends every request through: timeout, retries, and turning
// error responses into ServiceErrors. Web APIs only (fetch, AbortController, timers, Headers).
import { isAppRouteNoBody, type AppRoute, type ApiFetcherArgs } from '@ts-rest/core';
import type { Credentials } from './credentials.ts';
import { NetworkError, ProblemError, TimeoutError, UnexpectedResponseError, type ProblemIssue } from './errors.ts';

/** Retry tuning. Retries happen only for idempotent calls, and only within the call's timeout. */
export interface RetryPolicy {
  /** Retries after the first attempt, 0 to 3 (default 3, so at most 4 attempts). */
  maxRetries: number;
  /** Backoff before retry n is drawn from [d/2, d] with d = min(maxDelayMs, baseDelayMs * 2^(n-1)). Default 100. */
  baseDelayMs: number;
  /** Cap of the exponential backoff (default 2000). A `Retry-After` header is not capped by it. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 2000 };
const MAX_RETRIES = 3;
export const DEFAULT_TIMEOUT_MS = 5000;

/** The client's retry policy: the defaults with the given changes, which may lower `maxRetries` but not raise it. */
export function retryPolicy(given: Partial<RetryPolicy> | undefined): RetryPolicy {
  const policy = { ...DEFAULT_RETRY, ...given };
  if (!Number.isInteger(policy.maxRetries) || policy.maxRetries < 0 || policy.maxRetries > MAX_RETRIES) {
    throw new RangeError(`retry.maxRetries must be an integer from 0 to ${MAX_RETRIES}`);
  }
  if (!(policy.baseDelayMs >= 0) || !(policy.maxDelayMs >= 0)) throw new RangeError('retry delays must be non-negative');
  return policy;
}
/** Largest delay timers accept; a timeout above it (or Infinity) means no timeout. */
const MAX_TIMER_MS = 2_147_483_647;

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

export interface TransportConfig {
  /** Resolved at every call, so that a fetch installed later is used. */
  fetch: () => FetchLike;
  timeoutMs: number;
  retry: RetryPolicy;
  sleep: Sleep;
  random: () => number;
  isIdempotent: (route: AppRoute) => boolean;
  /** The Authorization of requests that do not bring their own (the token request brings its client's). */
  credentials: Credentials;
}

/** Per-call settings the client passes through ts-rest to the transport. */
export interface CallContext {
  timeoutMs?: number | undefined;
}

export type TransportArgs = ApiFetcherArgs & { call?: CallContext };

/** A response body that is not JSON, kept as text for the error message. */
class RawBody {
  constructor(readonly text: string) {}
}

/** A wait or a call cut short by the request's signal; the caller reports it as its timeout. */
class Aborted extends Error {
  constructor() {
    super('aborted');
  }
}

/** Waits for `ms`, or rejects as soon as `signal` aborts (and then clears its timer). */
export const defaultSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new Aborted());
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Aborted());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** Settles like `promise`, or rejects as soon as `signal` aborts, whatever `promise` does. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Aborted());
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
}

/**
 * Milliseconds to wait according to a `Retry-After` header: delay-seconds (`"2"`) or an HTTP-date
 * (`"Wed, 21 Oct 2015 07:28:00 GMT"`, a date in the past meaning 0). Undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/^[A-Za-z]{3}/.test(text)) return undefined; // every HTTP-date form starts with a day name
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Exponential backoff with equal jitter before retry number `retry` (1-based). */
function backoffMs(retry: number, policy: RetryPolicy, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

const isRetryableStatus = (status: number) => status === 429 || status >= 500;

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return undefined;
  const contentType = response.headers.get('content-type') ?? '';
  if (/^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // fall through: reported as an unexpected response
    }
  }
  return new RawBody(text);
}

interface Received {
  status: number;
  headers: Headers;
  body: unknown;
}

const snippet = (body: unknown): string => {
  if (body === undefined) return 'empty body';
  const text = body instanceof RawBody ? body.text : JSON.stringify(body);
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 300)}...` : flat;
};

const isIssueList = (value: unknown): value is ProblemIssue[] =>
  Array.isArray(value) &&
  value.every(
    (i: unknown) =>
      typeof i === 'object' && i !== null && 'path' in i && typeof i.path === 'string' && 'message' in i && typeof i.message === 'string',
  );

/** The ServiceError for a response that is not a declared success of the route, or undefined when it is one. */
function responseError(route: AppRoute, received: Received, attempts: number): ProblemError | undefined {
  const { status, body, headers } = received;
  const requestId = headers.get('x-request-id') ?? undefined;
  const declared = route.responses[status];
  if (status >= 200 && status < 300 && declared !== undefined) {
    if (isAppRouteNoBody(declared)) return undefined;
    if (body !== undefined && !(body instanceof RawBody)) return undefined;
    return new UnexpectedResponseError({ status, detail: `unreadable success body: ${snippet(body)}`, attempts, requestId });
  }
  if (status >= 400 && body && typeof body === 'object' && !(body instanceof RawBody) && typeof (body as { type?: unknown }).type === 'string') {
    const problem = body as { type: string; title?: unknown; detail?: unknown; errors?: unknown };
    return new ProblemError({
      type: problem.type,
      status,
      title: typeof problem.title === 'string' ? problem.title : `HTTP ${status}`,
      detail: typeof problem.detail === 'string' ? problem.detail : '',
      errors: isIssueList(problem.errors) ? problem.errors : undefined,
      attempts,
      requestId,
    });
  }
  if (status >= 400 && body && typeof body === 'object' && !(body instanceof RawBody) && typeof (body as { error?: unknown }).error === 'string') {
    // An OAuth route's RFC 6749 error: its code is the type.
    const { error, error_description: description } = body as { error: string; error_description?: unknown };
    return new ProblemError({ type: error, status, title: error, detail: typeof description === 'string' ? description : '', attempts, requestId });
  }
  return new UnexpectedResponseError({ status, detail: snippet(body), attempts, requestId });
}

function checkTimeout(timeoutMs: unknown): number {
  if (typeof timeoutMs !== 'number' || Number.isNaN(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`);
  }
  return timeoutMs;
}

/**
 * The ts-rest `api` function: sends the request, retries it when the route is idempotent and the
 * outcome is a network error, a 5xx or a 429 (waiting `Retry-After` when given, else exponential
 * backoff with jitter), all within one deadline of `timeoutMs` from the start of the call. Returns
 * only declared success responses; everything else is thrown as a ServiceError.
 */
export function createTransport(config: TransportConfig) {
  return async (args: TransportArgs): Promise<{ status: number; body: unknown; headers: Headers }> => {
    const timeoutMs = checkTimeout(args.call?.timeoutMs ?? config.timeoutMs);
    const retries = config.isIdempotent(args.route) ? config.retry.maxRetries : 0;
    const fetchImpl = config.fetch();
    const controller = new AbortController();
    const { signal } = controller;
    const started = Date.now();
    const timer = timeoutMs <= MAX_TIMER_MS ? setTimeout(() => controller.abort(), timeoutMs) : undefined;
    let attempts = 0;
    let renewed = false;
    try {
      for (;;) {
        attempts += 1;
        let received: Received | undefined;
        let failure: unknown;
        let sent: string | undefined;
        const headers = { ...args.headers };
        if (headers.authorization === undefined) {
          try {
            sent = await untilAborted(config.credentials.authorization(), signal);
            if (sent !== undefined) headers.authorization = sent;
          } catch (error) {
            if (signal.aborted) throw new TimeoutError(timeoutMs, attempts);
            throw error;
          }
        }
        try {
          received = await untilAborted(
            (async () => {
              const response = await fetchImpl(args.path, {
                method: args.method,
                headers,
                body: args.body ?? undefined,
                signal,
              });
              return { status: response.status, headers: response.headers, body: await readBody(response) };
            })(),
            signal,
          );
        } catch (error) {
          if (signal.aborted) throw new TimeoutError(timeoutMs, attempts);
          failure = error;
        }

        const error = received ? responseError(args.route, received, attempts) : new NetworkError(failure, attempts);
        if (!error) return received!;
        // A refused token is renewed and the request sent again, once: a 401 request changed nothing.
        if (received?.status === 401 && sent !== undefined && !renewed && config.credentials.renew(sent)) {
          renewed = true;
          continue;
        }
        const retryable = received ? isRetryableStatus(received.status) : true;
        if (!retryable || attempts > retries) throw error;
        const wait = parseRetryAfter(received?.headers.get('retry-after')) ?? backoffMs(attempts, config.retry, config.random);
        // A wait that would end past the deadline cannot lead to an answer: report what we have now.
        if (Date.now() - started + wait >= timeoutMs) throw error;
        try {
          await untilAborted(config.sleep(wait, signal), signal);
        } catch (sleepError) {
          if (signal.aborted) throw new TimeoutError(timeoutMs, attempts);
          throw sleepError;
        }
      }
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  };
}
