import type { Request, Response } from 'express';
import { isAppRoute, type AppRouter } from '@ts-rest/core';
import onHeaders from 'on-headers';
import { REVISION_HEADER, type Cached, type RouteMetadata } from '../../contract/index.ts';
import type { Principal } from '../auth/principal.ts';
import { recordingWrites, type Actor, type Position } from '../store/revisions.ts';
import { principalOf, type AppDeps } from './context.ts';
import { encodeRevision } from './revisions.ts';

/**
 * What a write owes, applied here to the handler of every route whose contract metadata says it
 * writes, so that no route can forget it: its transactions name its actor to the changes feed, and it
 * answers with the revision that includes them (docs/consistency.md#revisions); once it has
 * succeeded, and before it is answered, what the metadata says it `invalidates` is announced for the
 * caller's tenant (this process's caches forget it, then every other worker's), so that the caller's
 * next request sees the write on any worker. A write that turned out to change nothing of a kind
 * says so (changedNothing), and that kind is not announced.
 */
export function withWriteObligations<T extends object>(contract: AppRouter, router: T, announce: AppDeps['announce']): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, route] of Object.entries(router)) {
    const schema = contract[name]!;
    if (!isAppRoute(schema)) {
      wrapped[name] = withWriteObligations(schema, route as object, announce);
      continue;
    }
    const { revisions, invalidates = [] } = schema.metadata as RouteMetadata;
    wrapped[name] = revisions === 'writes' ? recording(announcing(route as Handler, invalidates, announce)) : route;
  }
  return wrapped as T;
}

/** What a route's write left as it was: the kinds its handler named, by request. */
const unchanged = new WeakMap<Request, Set<Cached>>();

/** Tells the obligations of `req`'s write that it changed nothing of `kinds`: they are not announced. */
export function changedNothing(req: Request, ...kinds: Cached[]): void {
  const named = unchanged.get(req) ?? new Set();
  for (const kind of kinds) named.add(kind);
  unchanged.set(req, named);
}

type Handler = (args: { req: Request; res: Response }) => Promise<{ status: number }>;

function announcing(handler: Handler, invalidates: readonly Cached[], announce: AppDeps['announce']): Handler {
  if (invalidates.length === 0) return handler;
  return async (args) => {
    const answer = await handler(args);
    if (answer.status < 200 || answer.status >= 300) return answer;
    const { tenantId } = principalOf(args.req);
    const left = unchanged.get(args.req);
    for (const kind of invalidates) if (!left?.has(kind)) await announce({ kind, tenantId });
    return answer;
  };
}

/**
 * Runs the handler recording its writes as its principal's (the actor) and answering with the
 * revision that includes them: around the handler's promise rather than Express's `next`, whose end
 * a middleware cannot see (docs/decisions.md#a-writes-actor-is-carried-only-while-a-write-runs).
 */
function recording(handler: Handler): Handler {
  return (args) => {
    const { req, res } = args;
    const principal = principalOf(req);
    let revision: () => Position | null = () => null;
    onHeaders(res, () => {
      const written = revision();
      if (written && res.statusCode < 300) res.setHeader(REVISION_HEADER, encodeRevision(principal.cursorSecret, written));
    });
    const recorded = recordingWrites(actorOf(principal), () => handler(args));
    revision = recorded.revision;
    return recorded.result;
  };
}

/** Who a principal's writes are recorded as: its key, or its OAuth client and the subject its token speaks for. */
const actorOf = (principal: Principal): Actor =>
  principal.kind === 'api_key'
    ? { key_id: principal.keyId }
    : { client_id: principal.clientId, ...(principal.sub === undefined ? {} : { sub: principal.sub }) };
