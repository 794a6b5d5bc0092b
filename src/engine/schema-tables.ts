import type { CompiledSchema } from './schema.ts';

/** Longest chain of arrows (`T->R`) a walk follows (docs/model.md#arrows). */
export const MAX_ARROW_DEPTH = 16;

/** Arrows through one relation: holders of a `target` on an X with a grant (X, `via`, o) hold the relation on o. */
export interface Arrows<K> {
  via: K;
  targets: K[];
}

/**
 * A compiled schema's rules as the walks read them, by namespace and relation: what holding a
 * relation implies and confers, and which arrows confer it. K is how the reader names namespaces
 * and relations: a GrantIndex's numbers (NodeNames.tablesOf), or the names themselves (explain).
 */
export interface SchemaTables<K> {
  /** By namespace and relation R: the relations whose holders hold R (a check walks these backwards). */
  implied: Map<K, Map<K, K[]>>;
  /** By namespace and relation: the arrows that confer it, grouped by the relation they go through. */
  arrows: Map<K, Map<K, Arrows<K>[]>>;
  /** By namespace and relation R: the relations that holding R confers (a listing walks these forwards). */
  conferred: Map<K, Map<K, K[]>>;
  /**
   * By the relation held on the object X at the arrow's far end, then by `via`, then by the
   * namespace of o: the relations conferred on o by a grant (X, via, o). A listing looks the
   * relation held up once per pair, and reads X's grants only when some arrow goes out of it.
   */
  arrowsOut: Map<K, Map<K, Map<K, K[]>>>;
}

/** How the tables name a namespace and a relation. */
export interface TableKeys<K> {
  namespace(name: string): K;
  relation(name: string): K;
}

/** The schema's tables, named by `keys`. */
export function schemaTables<K>(schema: CompiledSchema, keys: TableKeys<K>): SchemaTables<K> {
  const tables: SchemaTables<K> = { implied: new Map(), arrows: new Map(), conferred: new Map(), arrowsOut: new Map() };
  for (const row of schema.closure) {
    const [ns, rel, implied] = [keys.namespace(row.ns), keys.relation(row.rel), keys.relation(row.implied)];
    append(tables.implied, ns, rel, implied);
    append(tables.conferred, ns, implied, rel);
  }
  const arrowsOut = new Map<K, Map<K, Map<K, Set<K>>>>();
  for (const row of schema.arrows) {
    const [ns, rel, via, target] = [keys.namespace(row.ns), keys.relation(row.rel), keys.relation(row.via), keys.relation(row.target)];
    // A walk reads a pair's grants through one relation once, however many arrows go through it.
    const throughVia = tables.arrows
      .get(ns)
      ?.get(rel)
      ?.find((arrows) => arrows.via === via);
    if (throughVia) throughVia.targets.push(target);
    else append(tables.arrows, ns, rel, { via, targets: [target] });
    let byVia = arrowsOut.get(target);
    if (!byVia) arrowsOut.set(target, (byVia = new Map<K, Map<K, Set<K>>>()));
    let byNamespace = byVia.get(via);
    if (!byNamespace) byVia.set(via, (byNamespace = new Map<K, Set<K>>()));
    let conferred = byNamespace.get(ns);
    if (!conferred) byNamespace.set(ns, (conferred = new Set<K>()));
    // An arrow's relation is declared, so the closure confers it on itself too.
    for (const relation of tables.conferred.get(ns)?.get(rel) ?? [rel]) conferred.add(relation);
  }
  // Gathered in sets (a model at the limits has thousands of arrows), kept as arrays: what a listing reads.
  for (const [target, byVia] of arrowsOut) {
    tables.arrowsOut.set(
      target,
      new Map([...byVia].map(([via, byNamespace]) => [via, new Map([...byNamespace].map(([ns, set]) => [ns, [...set]]))])),
    );
  }
  return tables;
}

/** Relations whose holders hold `relation` on objects of `ns`: `relation` itself in an open namespace. */
export function impliedOn<K>(tables: SchemaTables<K>, ns: K, relation: K): readonly K[] {
  return tables.implied.get(ns)?.get(relation) ?? [relation];
}

/** Relations that holding `relation` on an object of `ns` confers: `relation` itself in an open namespace. */
export function conferredOn<K>(tables: SchemaTables<K>, ns: K, relation: K): readonly K[] {
  return tables.conferred.get(ns)?.get(relation) ?? [relation];
}

/** No arrows out of a pair, for a walk to read without making an empty list each time. */
export const NO_ARROWS: readonly Arrows<never>[] = [];

/** The arrows that confer `relation` on objects of `ns`, grouped by the relation they go through. */
export function arrowsOn<K>(tables: SchemaTables<K>, ns: K, relation: K): readonly Arrows<K>[] {
  return tables.arrows.get(ns)?.get(relation) ?? NO_ARROWS;
}

function append<K, V>(map: Map<K, Map<K, V[]>>, ns: K, relation: K, value: V): void {
  let byRelation = map.get(ns);
  if (!byRelation) map.set(ns, (byRelation = new Map<K, V[]>()));
  const list = byRelation.get(relation);
  if (list) list.push(value);
  else byRelation.set(relation, [value]);
}
