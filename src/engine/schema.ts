import { DomainError } from '../errors.ts';
import type { NamespaceDefinition, RelationDefinitions } from './definitions.ts';
import { parseReference } from './definitions.ts';
import { ModelRules } from './model-rules.ts';
import { nearestName } from './nearest.ts';

export type { NamespaceDefinition, RelationDefinition, RelationDefinitions } from './definitions.ts';

/** `rel` on an object of `ns` is also held by whoever holds `implied` on it (closure includes `rel` itself). */
export interface ClosureRow {
  ns: string;
  rel: string;
  implied: string;
}
/** Whoever holds `target` on an object X with a grant (X, `via`, o) holds `rel` on o, o in `ns`. */
export interface ArrowRow {
  ns: string;
  rel: string;
  via: string;
  target: string;
}

/**
 * A tenant's namespaces compiled into the two tables the store's set-based queries join against.
 * Open namespaces contribute no rows: their relations imply only themselves.
 */
export class CompiledSchema {
  readonly closure: ClosureRow[] = [];
  readonly arrows: ArrowRow[] = [];
  readonly closureJson: string;
  readonly arrowsJson: string;
  /** Which relations the tables answer alone, and the rules of the others (`requires`, `excludes`). */
  readonly rules: ModelRules;
  private readonly byName: Map<string, NamespaceDefinition>;

  constructor(namespaces: readonly NamespaceDefinition[]) {
    this.byName = new Map(namespaces.map((ns) => [ns.name, ns]));
    this.rules = new ModelRules(namespaces);
    for (const ns of tabledDefinitions(namespaces, this.rules)) {
      for (const { rel, closure, arrows } of relationsOf(ns.relations)) {
        for (const implied of closure) this.closure.push({ ns: ns.name, rel, implied });
        for (const { via, relation: target } of arrows) this.arrows.push({ ns: ns.name, rel, via, target });
      }
    }
    this.closureJson = JSON.stringify(this.closure);
    this.arrowsJson = JSON.stringify(this.arrows);
  }

  /** How big the model is compiled: closure rows plus arrows, plus the references the rule evaluator follows. */
  get rows(): number {
    return this.closure.length + this.arrows.length + this.rules.references;
  }

  /**
   * `new CompiledSchema(namespaces).rows` without compiling: no rows made, nor their JSON. What a
   * change to a model is refused on (docs/model.md#model-limits), so that a model past the limit
   * costs its count, not its compile (docs/decisions.md#a-tenants-model-is-limited).
   */
  static rowsOf(namespaces: readonly NamespaceDefinition[]): number {
    const rules = new ModelRules(namespaces);
    let rows = rules.references;
    for (const ns of tabledDefinitions(namespaces, rules)) {
      for (const { closure, arrows } of relationsOf(ns.relations)) rows += closure.length + arrows.length;
    }
    return rows;
  }

  namespace(name: string): NamespaceDefinition | undefined {
    return this.byName.get(name);
  }

  get namespaces(): NamespaceDefinition[] {
    return [...this.byName.values()];
  }

  /** Throws the problem a request naming `relation` in `namespace` deserves, if any. */
  assertRelation(namespace: string, relation: string): void {
    assertRelationOf(this.byName.get(namespace), namespace, relation);
  }
}

/** Throws the problem naming `relation` on an object of `namespace` deserves, given its definition (undefined: no such namespace). */
export function assertRelationOf(definition: NamespaceDefinition | undefined, namespace: string, relation: string): void {
  if (!definition) throw new DomainError('namespace-not-found', `namespace ${namespace} does not exist`);
  if (definition.relations && !Object.hasOwn(definition.relations, relation)) {
    throw new DomainError('unknown-relation', unknownRelationDetail(namespace, relation, Object.keys(definition.relations)));
  }
}

/** What an undeclared relation's problem says: the nearest declared one when it looks like a typo of it, and all of them. */
function unknownRelationDetail(namespace: string, relation: string, declared: string[]): string {
  const relations = [...declared].sort();
  const nearest = nearestName(relation, relations);
  return (
    `namespace ${namespace} declares no relation ${relation}${nearest ? ` (did you mean ${nearest}?)` : ''}; ` +
    (relations.length ? `it declares ${relations.join(', ')}` : 'it declares none')
  );
}

/** The definitions the tables are made of: the plain model's (every walk answers what grants confer, the rule evaluator the rest); open namespaces have none. */
function tabledDefinitions(namespaces: readonly NamespaceDefinition[], rules: ModelRules): { name: string; relations: RelationDefinitions }[] {
  return (rules.any ? rules.plainDefinitions() : namespaces).filter((ns) => ns.relations !== null) as {
    name: string;
    relations: RelationDefinitions;
  }[];
}

/** Each relation of a namespace with its same-object closure and the arrows it includes; every reference is parsed once. */
function* relationsOf(relations: RelationDefinitions): Generator<{ rel: string; closure: string[]; arrows: { via: string; relation: string }[] }> {
  const same = new Map<string, string[]>();
  const arrows = new Map<string, { via: string; relation: string }[]>();
  for (const [rel, definition] of Object.entries(relations)) {
    const references = (definition.includes ?? []).map(parseReference);
    same.set(
      rel,
      references.flatMap((ref) => (ref.kind === 'same' ? [ref.relation] : [])),
    );
    arrows.set(
      rel,
      references.flatMap((ref) => (ref.kind === 'arrow' ? [{ via: ref.via, relation: ref.relation }] : [])),
    );
  }
  for (const rel of same.keys()) yield { rel, closure: sameObjectClosure(same, rel), arrows: arrows.get(rel)! };
}

/** Every relation whose holders hold `relation` on the same object, `relation` included, given each relation's same-object includes. */
function sameObjectClosure(same: ReadonlyMap<string, readonly string[]>, relation: string): string[] {
  const seen = new Set<string>([relation]);
  const stack = [relation];
  while (stack.length > 0) {
    for (const included of same.get(stack.pop()!) ?? []) {
      if (!seen.has(included)) {
        seen.add(included);
        stack.push(included);
      }
    }
  }
  return [...seen];
}
