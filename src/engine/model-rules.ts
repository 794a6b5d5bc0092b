import { parseReference, type NamespaceDefinition, type Reference, type RelationDefinition } from './definitions.ts';

const key = (ns: string, relation: string) => `${ns}#${relation}`;

/** The references a relation's holders must also hold, and must not, with the includes the plain walk leaves to the rules. */
export interface RelationRules {
  /** Each reference with its text as written, which explain names. */
  includes: readonly RuleReference[];
  requires: readonly RuleReference[];
  excludes: readonly RuleReference[];
}

export type RuleReference = Reference & { text: string };

/**
 * Which relations of a tenant's model a walk of the union of grants answers alone ("plain": neither
 * they nor anything they include, directly or through arrows, requires or excludes), and the rules
 * of the others (docs/model.md#requires-and-excludes). A plain relation is answered as it always
 * was; a ruled one by the rule evaluator (rule-check.ts), which asks the walk of the plain model
 * (`plainDefinitions`) for each part that is plain.
 */
export class ModelRules {
  /** By namespace, then relation: the rules of each relation that is not plain. */
  private readonly ruled = new Map<string, Map<string, RelationRules>>();
  /** Relation names that are not plain in some namespace: an arrow to one of them is not plain (it may reach any namespace). */
  private readonly ruledNames = new Set<string>();
  /** `<namespace>#<relation>` of each relation that is not plain. */
  private readonly notPlain = new Set<string>();

  constructor(private readonly namespaces: readonly NamespaceDefinition[]) {
    const notPlain = this.notPlain;
    const markNotPlain = (namespace: string, relation: string) => {
      notPlain.add(key(namespace, relation));
      this.ruledNames.add(relation);
    };
    // An arrow `via->relation` reaches `relation` in whichever namespace the grants of `via` lead to.
    const arrowNotPlain = (relation: string) => this.ruledNames.has(relation);
    // Relations with rules, then whatever includes one of them, until nothing changes: models are small.
    for (const ns of namespaces) {
      for (const [relation, definition] of Object.entries(ns.relations ?? {})) {
        if ((definition.requires?.length ?? 0) + (definition.excludes?.length ?? 0) > 0) markNotPlain(ns.name, relation);
      }
    }
    if (notPlain.size === 0) return;
    for (let changed = true; changed;) {
      changed = false;
      for (const ns of namespaces) {
        for (const [relation, definition] of Object.entries(ns.relations ?? {})) {
          if (notPlain.has(key(ns.name, relation))) continue;
          const reaches = (definition.includes ?? [])
            .map(parseReference)
            .some((ref) => (ref.kind === 'same' ? notPlain.has(key(ns.name, ref.relation)) : arrowNotPlain(ref.relation)));
          if (reaches) {
            markNotPlain(ns.name, relation);
            changed = true;
          }
        }
      }
    }
    for (const ns of namespaces) {
      for (const [relation, definition] of Object.entries(ns.relations ?? {})) {
        if (!notPlain.has(key(ns.name, relation))) continue;
        let byRelation = this.ruled.get(ns.name);
        if (!byRelation) this.ruled.set(ns.name, (byRelation = new Map<string, RelationRules>()));
        byRelation.set(relation, {
          includes: this.referencesOf(definition.includes).filter((ref) => !this.isPlainReference(ns.name, ref)),
          requires: this.referencesOf(definition.requires),
          excludes: this.referencesOf(definition.excludes),
        });
      }
    }
  }

  /** References the evaluator follows, over all ruled relations: what the rules add to the size of the model. */
  get references(): number {
    let count = 0;
    for (const byRelation of this.ruled.values()) {
      for (const rules of byRelation.values()) count += rules.includes.length + rules.requires.length + rules.excludes.length;
    }
    return count;
  }

  /** Whether the model has any rule: without one, every relation is plain. */
  get any(): boolean {
    return this.ruled.size > 0;
  }

  /** The rules of `relation` on objects of `ns`; undefined when it is plain. */
  of(ns: string, relation: string): RelationRules | undefined {
    return this.ruled.get(ns)?.get(relation);
  }

  /** Whether a reference of a definition in `ns` is plain: what the plain walk answers alone. */
  isPlainReference(ns: string, ref: Reference): boolean {
    return ref.kind === 'same' ? !this.notPlain.has(key(ns, ref.relation)) : !this.ruledNames.has(ref.relation);
  }

  /**
   * The model the plain walk answers: every relation with its plain includes only, and no rules. On
   * a plain relation it answers as the model does; on a ruled one, what its own grants and its plain
   * includes confer, the part of its base the evaluator does not walk itself.
   */
  plainDefinitions(): NamespaceDefinition[] {
    return this.namespaces.map((ns) => {
      if (!ns.relations || !this.ruled.has(ns.name)) return ns;
      const relations: Record<string, RelationDefinition> = {};
      for (const [relation, definition] of Object.entries(ns.relations)) {
        const includes = (definition.includes ?? []).filter((entry) => this.isPlainReference(ns.name, parseReference(entry)));
        relations[relation] = includes.length > 0 ? { includes } : {};
      }
      return { name: ns.name, relations };
    });
  }

  private referencesOf(entries: readonly string[] | undefined): RuleReference[] {
    return (entries ?? []).map((text) => ({ ...parseReference(text), text }));
  }
}
