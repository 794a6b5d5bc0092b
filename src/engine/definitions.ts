/** A relation's definition: what confers it (`includes`), what its holders must also hold (`requires`) and must not (`excludes`): docs/model.md. */
export interface RelationDefinition {
  includes?: string[];
  requires?: string[];
  excludes?: string[];
}
export type RelationDefinitions = Record<string, RelationDefinition>;

/** A namespace as the engine sees it: `relations` null means open (any relation, nothing inherited). */
export interface NamespaceDefinition {
  name: string;
  relations: RelationDefinitions | null;
}

/** One reference of a definition's `includes`, `requires` or `excludes`: the same object's relation, or an arrow through `via`. */
export type Reference = { kind: 'same'; relation: string } | { kind: 'arrow'; via: string; relation: string };

export function parseReference(entry: string): Reference {
  const arrow = entry.indexOf('->');
  return arrow < 0 ? { kind: 'same', relation: entry } : { kind: 'arrow', via: entry.slice(0, arrow), relation: entry.slice(arrow + 2) };
}
