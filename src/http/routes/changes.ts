import { initServer } from '@ts-rest/express';
import { contract, type Change, type RouteMetadata } from '../../../contract/index.ts';
import type { Principal } from '../../auth/principal.ts';
import { hasScope } from '../../auth/scopes.ts';
import { DomainError } from '../../errors.ts';
import { ChangesExpired, readChanges } from '../../store/revisions.ts';
import { principalOf, type AppDeps } from '../context.ts';
import { mapInTurns } from '../in-turns.ts';
import { decodeRevisionAt, encodeRevision, encodeRevisions } from '../revisions.ts';

const s = initServer();

/**
 * The kinds of change the feed shows only to a caller that may list the things themselves: a key's
 * change to one whose scopes allow GET /v1/keys, an OAuth client's to one allowed GET /v1/oauth/clients.
 */
const LISTED_BY: readonly [Change['kind'], RouteMetadata][] = [
  ['key', contract.keys.list.metadata],
  ['oauth_client', contract.oauth.clients.list.metadata],
];

/** The kinds of change hidden from `principal`: those of things its scopes do not let it list. */
const hiddenFrom = (principal: Principal): Change['kind'][] =>
  LISTED_BY.filter(([, { scope }]) => !hasScope(principal.scopes, scope)).map(([kind]) => kind);

export const changeRoutes = ({ pool }: AppDeps) =>
  s.router(contract.changes, {
    list: async ({ query, req }) => {
      const principal = principalOf(req);
      const { tenantId, cursorSecret } = principal;
      const after = query.after === undefined ? null : decodeRevisionAt('query.after', cursorSecret, query.after);
      const page = await readChanges(pool, tenantId, after, query.limit, hiddenFrom(principal)).catch((error: unknown) => {
        if (error instanceof ChangesExpired) {
          throw new DomainError('changes-expired', 'the changes after this revision are no longer kept; read the feed again from its start');
        }
        throw error;
      });
      // The key that asked was just verified: its tenant exists.
      const { changes, next } = page!;
      const body = await mapInTurns(changes, (part) => {
        const revisions = encodeRevisions(
          cursorSecret,
          part.map((change) => change.position),
        );
        return part.map((change, i) => ({
          revision: revisions[i]!,
          at: change.at.toISOString(),
          // The migration's triggers write only the kinds and ops the contract names.
          kind: change.kind as Change['kind'],
          op: change.op as Change['op'],
          ...change.data,
          actor: change.actor,
        }));
      });
      return { status: 200, body: { changes: body, next_revision: encodeRevision(cursorSecret, next) } };
    },
  });
