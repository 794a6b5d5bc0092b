import { DomainError } from '../errors.ts';
import type { NamespaceDefinition, RelationDefinitions } from './definitions.ts';
import { parseReference as parseInclude } from './definitions.ts';
import { ModelRules } from './model-rules.ts';

export type { NamespaceDefinition, RelationDefinition, RelationDefinitions } from './definitions.ts';

/**
 * Rejects definitions the engine could not evaluate: an include naming a relation the namespace
 * does not declare (for arrows, the relation walked through), or a cycle of same-object includes.
 * The far side of an arrow lives in whatever namespace the related object has, so it is not checked.
 */
export function validateRelations(relations: RelationDefinitions): void {
  const declared = new Set(Object.keys(relations));
  for (const [relation, definition] of Object.entries(relations)) {
    for (const entry of definition.includes ?? []) {
      const include = parseInclude(entry);
      const named = include.kind === 'same' ? include.relation : include.via;
      if (!declared.has(named)) {
        throw new DomainError('invalid-namespace', `relation ${relation} includes "${entry}", but ${named} is not declared`);
      }
    }
  }
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (relation: string, path: string[]): void => {
    if (state.get(relation) === 'done') return;
    if (state.get(relation) === 'visiting') {
      const cycle = [...path.slice(path.indexOf(relation)), relation].join(' -> ');
      throw new DomainError('invalid-namespace', `relations include each other in a cycle: ${cycle}`);
    }
    state.set(relation, 'visiting');
    for (const entry of relations[relation]?.includes ?? []) {
      const include = parseInclude(entry);
      if (include.kind === 'same') visit(include.relation, [...path, relation]);
    }
    state.set(relation, 'done');
  };
  for (const relation of declared) visit(relation, []);
}

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
          const include = parseInclude(entry);
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
    throw new DomainError('unknown-relation', `namespace ${namespace} declares no relation ${relation}`);
  }
}

/** Every relation whose holders hold `relation` on the same object, `relation` included. */
function sameObjectClosure(relations: RelationDefinitions, relation: string): string[] {
  const seen = new Set<string>([relation]);
  const stack = [relation];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for (const entry of relations[current]?.includes ?? []) {
      const include = parseInclude(entry);
      if (include.kind === 'same' && !seen.has(include.relation)) {
        seen.add(include.relation);
        stack.push(include.relation);
      }
    }
  }
  return [...seen];
}
