import { AGENT_NAMESPACE, type Ref } from './refs.ts';

/**
 * Whether an agent's scope mask lets it hold `relation` on objects of `namespace`.
 * Entries are `<namespace>:<relation>` with `*` allowed on either side; anything else
 * (such as `check:read`) is kept but covers no relation of another namespace.
 */
export function scopeCovers(scope: readonly string[], namespace: string, relation: string): boolean {
  return scope.some((entry) => {
    const colon = entry.indexOf(':');
    if (colon < 0) return false;
    const ns = entry.slice(0, colon);
    const rel = entry.slice(colon + 1);
    return (ns === '*' || ns === namespace) && (rel === '*' || rel === relation);
  });
}

/**
 * Whether agent masks let the subject hold `relation` on objects of `namespace`: any subject but
 * an agent, or a registered agent (its scope known: `scopeOf` gives undefined for one that is not)
 * whose scope covers it. Read the scope from the same state of the tenant as the grants it masks.
 */
export function masksAdmit(
  subject: Ref,
  namespace: string,
  relation: string,
  scopeOf: (externalId: string) => readonly string[] | null | undefined,
): boolean {
  if (subject.ns !== AGENT_NAMESPACE) return true;
  const scope = scopeOf(subject.id);
  return scope !== undefined && scope !== null && scopeCovers(scope, namespace, relation);
}
