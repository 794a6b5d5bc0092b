import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { inSpan } from '../../tracing.ts';
import { principalOf, type AppDeps } from '../context.ts';

const s = initServer();

export const checkRoutes = ({ engine, metrics }: AppDeps) => ({
  check: s.route(contract.check, async ({ body, req }) => {
    const allowed = await inSpan('grantd.check', { 'grantd.relation': body.relation }, () => engine.check(principalOf(req).tenantId, body));
    metrics.countDecisions([allowed]);
    return { status: 200, body: { allowed } };
  }),
  explain: s.route(contract.explain, async ({ body, req }) => ({ status: 200, body: await engine.explain(principalOf(req).tenantId, body) })),
  checkBulk: s.route(contract.checkBulk, async ({ body, req }) => {
    const results = await inSpan('grantd.check_bulk', { 'grantd.checks': body.checks.length }, () =>
      engine.checkBulk(principalOf(req).tenantId, body.checks),
    );
    metrics.countDecisions(results.filter((r) => !r.error).map((r) => r.allowed));
    return { status: 200, body: { results } };
  }),
});
