import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { DomainError } from '../../errors.ts';
import { createKeyOnAuthority, listKeys, revokeKey } from '../../store/keys.ts';
import { createdKeyBody, keySummaryBody } from '../bodies.ts';
import { principalOf, type AppDeps } from '../context.ts';

const s = initServer();

export const keyRoutes = ({ db }: AppDeps) =>
  s.router(contract.keys, {
    create: async ({ body, req }) => {
      const key = await createKeyOnAuthority(db, principalOf(req), body.label, body.scopes);
      return { status: 201, body: createdKeyBody(key) };
    },
    list: async ({ req }) => {
      const rows = await listKeys(db, principalOf(req).tenantId);
      return { status: 200, body: { keys: rows.map(keySummaryBody) } };
    },
    revoke: async ({ params, req }) => {
      const { tenantId } = principalOf(req);
      if (!(await revokeKey(db, tenantId, params.id))) {
        throw new DomainError('key-not-found', `no live key ${params.id.slice(0, 128)}`);
      }
      return { status: 204, body: undefined };
    },
  });
