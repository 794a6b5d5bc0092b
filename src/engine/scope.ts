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
