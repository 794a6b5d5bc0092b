/**
 * Issue 42's tenant (bench/README.md, `check_rules`): the dataset loaded a second time, by the same
 * code path (loadGrantd), with the model's rules (RULES_NAMESPACES: `blocked`, and `viewer_unblocked`
 * excluding it) and the grants of rulesTriples (blocked users and groups, public documents viewed by
 * `user:*`), so that the dataset's tenant keeps measuring today's model.
 */
import { labelled, rulesMix, RULES_NAMESPACES, type Dataset, type LabelledCheck } from './dataset.ts';
import { Api, grantdAnswers, loadGrantd } from './load.ts';
import { createTenant } from './servers.ts';

export const RULES_TENANT = 'bench-rules';

/** The dataset's grants, then the rules'. */
function* rulesTenantTriples(ds: Dataset) {
  yield* ds.triples();
  yield* ds.rulesTriples();
}

/**
 * Creates the tenant (`grantd tenant create`) and loads it through the grantd at `url`; its admin
 * key, the grants written and how long the load took.
 */
export async function loadRulesTenant(
  root: string,
  databaseUrl: string,
  url: string,
  ds: Dataset,
  log: (line: string) => void,
): Promise<{ key: string; grants: number; seconds: number }> {
  const key = await createTenant(root, databaseUrl, RULES_TENANT);
  const loaded = await loadGrantd(new Api(url, key), ds, log, rulesTenantTriples(ds), RULES_NAMESPACES);
  return { key, ...loaded };
}

/** check_rules' labelled mix: its answers in the tenant's model (Dataset.expect). */
export const rulesSample = (ds: Dataset, seed: number): LabelledCheck[] => labelled(ds, rulesMix(ds, 2_400, seed + 5), 'rules');

/**
 * The tenant's answers to the labelled mix, one by one and in bulk, against the reference model:
 * disagreements of the single checks with the model, and of the bulk with the single checks (a
 * failed request counts as one).
 */
export async function compareRules(api: Api, sample: LabelledCheck[]): Promise<{ mismatches: number; bulkMismatches: number; first: string[] }> {
  const { single, bulk } = await grantdAnswers(api, sample);
  const wrong = sample.flatMap((c, i) =>
    single[i] === c.expected ? [] : [`${c.subject} ${c.relation} ${c.object}: grantd ${single[i]}, model ${c.expected}`],
  );
  return {
    mismatches: wrong.length,
    bulkMismatches: single.filter((answer, i) => answer === null || answer !== bulk[i]).length,
    first: wrong.slice(0, 3),
  };
}
