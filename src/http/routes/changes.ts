import { initServer } from '@ts-rest/express';
import { contract, type Change } from '../../../contract/index.ts';
import { DomainError } from '../../errors.ts';
import { ChangesExpired, readChanges } from '../../store/revisions.ts';
import { principalOf, type AppDeps } from '../context.ts';
import { decodeRevision, encodeRevision } from '../revisions.ts';

const s = initServer();

export const changeRoutes = ({ db }: AppDeps) =>
  s.router(contract.changes, {
    list: async ({ query, req }) => {
      const { tenantId, cursorSecret } = principalOf(req);
      const after = query.after === undefined ? null : decodeRevision(cursorSecret, query.after);
      const page = await readChanges(db, tenantId, after, query.limit).catch((error: unknown) => {
        if (error instanceof ChangesExpired) {
          throw new DomainError('changes-expired', 'the changes after this revision are no longer kept; read the feed again from its start');
        }
        throw error;
      });
      // The key that asked was just verified: its tenant exists.
      const { changes, next } = page!;
      return {
        status: 200,
        body: {
          changes: changes.map((change) => ({
            revision: encodeRevision(cursorSecret, change.position),
            at: change.at.toISOString(),
            // The migration's triggers write only the kinds and ops the contract names.
            kind: change.kind as Change['kind'],
            op: change.op as Change['op'],
            ...change.data,
            actor: change.actor,
          })),
          next_revision: encodeRevision(cursorSecret, next),
        },
      };
    },
  });
