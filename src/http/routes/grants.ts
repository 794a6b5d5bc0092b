import { initServer } from '@ts-rest/express';
import { contract, TripleSchema } from '../../../contract/index.ts';
import type { CheckInput } from '../../engine/engine.ts';
import { readWindow, type WindowInput, type WindowProblem } from '../../engine/grant-window.ts';
import { AGENT_NAMESPACE, parseRef } from '../../engine/refs.ts';
import { DomainError } from '../../errors.ts';
import { AgentNotRegistered, applyBatch, createGrant, deleteGrant, grantKey, listGrants, type GrantKey } from '../../store/grants.ts';
import { grantBody } from '../bodies.ts';
import { schemaProblem } from '../middleware/errors.ts';
import { inSpan } from '../../tracing.ts';
import { principalOf, type AppDeps } from '../context.ts';
import { changedNothing } from '../write-obligations.ts';
import { decodeStringTuple, keysetPage } from '../cursor.ts';

const s = initServer();

/** The triple a revoke names: its JSON body, or else its query parameters; both at once is ambiguous. */
function revokedTriple(body: CheckInput | undefined, query: Partial<CheckInput>): CheckInput {
  const inQuery = Object.keys(query).length > 0;
  if (body !== undefined && inQuery) {
    throw new DomainError('invalid-request', 'give the triple either as the JSON body or as the query parameters, not both');
  }
  const parsed = TripleSchema.safeParse(body ?? query);
  if (!parsed.success)
    throw schemaProblem(
      parsed.error.issues.map((issue) => ({
        issue,
        where: body === undefined ? 'query' : 'body',
        value: (body ?? query)[issue.path[0] as keyof CheckInput],
      })),
    );
  return parsed.data;
}

const tripleId = (t: { subject: string; relation: string; object: string }) => JSON.stringify([t.subject, t.relation, t.object]);

/** Where the first write naming `agent:<externalId>` names it: `writes[3].subject` (or `.object`). */
function writtenAgentPath(writes: readonly { subject: string; object: string }[], externalId: string): string {
  const ref = `${AGENT_NAMESPACE}:${externalId}`;
  const index = writes.findIndex((t) => t.subject === ref || t.object === ref);
  return `writes[${index}].${writes[index]?.subject === ref ? 'subject' : 'object'}`;
}

/** The windows of grants to write, each read at the server's clock; one 400 naming every bad field, before anything is written. */
function windowsOf(inputs: readonly WindowInput[], prefixOf: (index: number) => string) {
  const now = Date.now();
  const problems: WindowProblem[] = [];
  const windows = inputs.map((input, i) => {
    const read = readWindow(input, now, prefixOf(i));
    problems.push(...read.problems);
    return read.window;
  });
  const [first] = problems;
  if (first) throw new DomainError('invalid-request', `${first.path}: ${first.message}`, problems);
  return windows;
}

export const grantRoutes = ({ db, pool, engine }: AppDeps) =>
  s.router(contract.grants, {
    create: async ({ body, req }) => {
      const { tenantId } = principalOf(req);
      const [window] = windowsOf([body], () => 'body.');
      const [triple] = await engine.parseTriples(tenantId, [body], true);
      const { row, outcome } = await createGrant(db, tenantId, { ...triple!, window: window ?? null });
      if (outcome === 'unchanged') changedNothing(req, 'grants');
      return { status: outcome === 'created' ? 201 : 200, body: grantBody(row) };
    },
    revoke: async ({ body, query, req }) => {
      const { tenantId } = principalOf(req);
      const [triple] = await engine.parseTriples(tenantId, [revokedTriple(body, query)], false);
      // Announced even when there was nothing to delete: a revoke that raced with another one found the
      // grant gone, and its caller too must read that on this node at once, before the other's relay comes.
      await deleteGrant(db, tenantId, triple!);
      return { status: 204, body: undefined };
    },
    list: async ({ query, req }) => {
      const { tenantId, cursorSecret } = principalOf(req);
      const filter = {
        ...(query.subject ? { subject: parseRef(query.subject, 'subject') } : {}),
        ...(query.relation ? { relation: query.relation } : {}),
        ...(query.object ? { object: parseRef(query.object, 'object') } : {}),
        ...(query.namespace ? { namespace: query.namespace } : {}),
        ...(query.active ? { active: true } : {}),
      };
      const binding = ['grants', query.subject ?? null, query.relation ?? null, query.object ?? null, query.namespace ?? null];
      // A cursor of the active listing is bound to it too; the others' stay as they were issued before.
      if (query.active) binding.push('active');
      const after = decodeStringTuple(cursorSecret, binding, query.cursor, 5) as GrantKey | null;
      const rows = await inSpan('grantd.list_grants', {}, () => listGrants(pool, tenantId, filter, after, query.limit + 1, new Date()));
      const page = keysetPage(cursorSecret, binding, rows, query.limit, grantKey);
      return { status: 200, body: { grants: page.rows.map(grantBody), next_cursor: page.next_cursor } };
    },
    batch: async ({ body, req }) => {
      const { tenantId } = principalOf(req);
      // Named like any other refused item (docs/errors.md#problems-of-a-batch): the delete, and the write it repeats.
      const written = new Map(body.writes.map((t, i) => [tripleId(t), i] as const).reverse()); // the first write of a triple
      for (const [i, t] of body.deletes.entries()) {
        const write = written.get(tripleId(t));
        if (write !== undefined) {
          throw new DomainError('invalid-request', `${tripleId(t)} is also written, as writes[${write}]; send it in one list only`).at(
            `deletes[${i}]`,
          );
        }
      }
      const windows = windowsOf(body.writes, (i) => `writes[${i}].`);
      const parsed = await engine.parseTriples(tenantId, body.writes, true, 'writes');
      const writes = parsed.map((triple, i) => ({ ...triple, window: windows[i] ?? null }));
      const deletes = await engine.parseTriples(tenantId, body.deletes, false, 'deletes');
      const applied = await applyBatch(db, tenantId, writes, deletes).catch((error: unknown) => {
        throw error instanceof AgentNotRegistered ? error.at(writtenAgentPath(body.writes, error.externalId)) : error;
      });
      return { status: 200, body: applied };
    },
  });
