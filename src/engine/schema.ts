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
    // The tables are the plain model's: every walk answers what grants confer, the rule evaluator the rest.
    for (const ns of this.rules.any ? this.rules.plainDefinitions() : namespaces) {
      if (!ns.relations) continue;
      for (const rel of Object.keys(ns.relations)) {
        for (const implied of sameObjectClosure(ns.relations, rel)) this.closure.push({ ns: ns.name, rel, implied });
        for (const entry of ns.relations[rel]?.includes ?? []) {
          const include = parseReference(entry);
          if (include.kind === 'arrow') this.arrows.push({ ns: ns.name, rel, via: include.via, target: include.relation });
        }
      }
    }
    this.closureJson = JSON.stringify(this.closure);
    this.arrowsJson = JSON.stringify(this.arrows);
  }

  /** How big the model is compiled: closure rows plus arrows, plus the references the rule evaluator follows. */
  get rows(): number {
    return this.closure.length + this.arrows.length + this.rules.references;
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

/** Every relation whose holders hold `relation` on the same object, `relation` included. */
function sameObjectClosure(relations: RelationDefinitions, relation: string): string[] {
  const seen = new Set<string>([relation]);
  const stack = [relation];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for (const entry of relations[current]?.includes ?? []) {
      const include = parseReference(entry);
      if (include.kind === 'same' && !seen.has(include.relation)) {
        seen.add(include.relation);
        stack.push(include.relation);
      }
    }
  }
  return [...seen];
}
