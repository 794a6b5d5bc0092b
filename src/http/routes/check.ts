import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { principalOf, type AppDeps } from '../context.ts';

const s = initServer();

export const checkRoutes = ({ engine }: AppDeps) => ({
  check: s.route(contract.check, async ({ body, req }) => ({
    status: 200,
    body: { allowed: await engine.check(principalOf(req).tenantId, body) },
  })),
  checkBulk: s.route(contract.checkBulk, async ({ body, req }) => ({
    status: 200,
    body: { results: await engine.checkBulk(principalOf(req).tenantId, body.checks) },
  })),
});
