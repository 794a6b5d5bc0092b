import { initServer } from '@ts-rest/express';
import { contract } from '../../../contract/index.ts';
import { inSpan, tracingOn } from '../../tracing.ts';
import { principalOf, type AppDeps } from '../context.ts';
import { answeredAsIs, answeredAsList } from '../json-answers.ts';

const s = initServer();

/** The two answers of a check, made once rather than per request, their JSON too. */
const ALLOWED = Object.freeze({ status: 200, body: answeredAsIs({ allowed: true } as const) } as const);
const DENIED = Object.freeze({ status: 200, body: answeredAsIs({ allowed: false } as const) } as const);
/** A bulk's items answered: the same two bodies, whose JSON the bulk's answer joins (answeredAsList). */
const ITEM = { allowed: ALLOWED.body, denied: DENIED.body };

export const checkRoutes = ({ engine, metrics }: AppDeps) => ({
  check: s.route(contract.check, async ({ body, req }) => {
    const tenantId = principalOf(req).tenantId;
    // The span's attributes and closure only when traces are on: a check is the hottest request.
    const allowed = tracingOn()
      ? await inSpan('grantd.check', { 'grantd.relation': body.relation }, () => engine.check(tenantId, body))
      : (engine.checkNow(tenantId, body) ?? (await engine.check(tenantId, body)));
    metrics.countDecision(allowed);
    return allowed ? ALLOWED : DENIED;
  }),
  explain: s.route(contract.explain, async ({ body, req }) => ({ status: 200, body: await engine.explain(principalOf(req).tenantId, body) })),
  checkBulk: s.route(contract.checkBulk, async ({ body, req }) => {
    const results = await inSpan('grantd.check_bulk', { 'grantd.checks': body.checks.length }, () =>
      engine.checkBulk(principalOf(req).tenantId, body.checks),
    );
    const items = new Array<(typeof results)[number]>(results.length);
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!;
      if (result.error) items[i] = result;
      else {
        metrics.countDecision(result.allowed);
        items[i] = result.allowed ? ITEM.allowed : ITEM.denied;
      }
    }
    return { status: 200, body: answeredAsList('results', items) };
  }),
});
