// The namespace form's model: rows of the relation editor, the body they make, and the checks the
// server makes of it (the contract's schema, then the engine's validateRelations and, against the
// tenant's other namespaces, assertNoExclusionCycle), run as you type.
import { CreateNamespaceSchema } from '../../contract/namespaces.ts';
import { assertNoExclusionCycle, REFERENCE_LISTS, relationsByName, validateRelations } from '../engine/definition-checks.ts';
import type { NamespaceDefinition, RelationDefinition } from '../engine/schema.ts';
import { DomainError } from '../errors.ts';

export { REFERENCE_LISTS, relationsByName };

/** A relation of the editor: its name, and each list of references as comma- or space-separated entries, R or T->R (docs/model.md#requires-and-excludes). */
export type RelationRow = { name: string } & Record<(typeof REFERENCE_LISTS)[number], string>;

export interface NamespaceDraft {
  name: string;
  /** An open namespace declares no relations: any relation, nothing inherited. */
  open: boolean;
  rows: RelationRow[];
}

export const EMPTY_ROW: RelationRow = { name: '', includes: '', requires: '', excludes: '' };

const entriesOf = (list: string): string[] => list.split(/[\s,]+/).filter(Boolean);

/** The body POST /v1/namespaces is sent: only the lists a row fills. */
export function bodyOf(draft: NamespaceDraft) {
  if (draft.open) return { name: draft.name.trim() };
  const relations: Record<string, RelationDefinition> = {};
  for (const row of draft.rows) {
    const definition: RelationDefinition = {};
    for (const list of REFERENCE_LISTS) {
      const entries = entriesOf(row[list]);
      if (entries.length > 0) definition[list] = entries;
    }
    relations[row.name.trim()] = definition;
  }
  return { name: draft.name.trim(), relations };
}

/**
 * What the server would refuse in the draft, by form field (`name`, `relations`); empty when it would
 * accept it. `others` are the tenant's namespaces as last listed: with them, a cycle through an
 * exclusion that the draft would close is found too (the server checks the model it holds).
 */
export function draftProblems(draft: NamespaceDraft, others: readonly NamespaceDefinition[] = []): Record<string, string> {
  const names = draft.rows.map((row) => row.name.trim());
  const repeated = names.find((name, i) => names.indexOf(name) !== i);
  if (!draft.open && repeated !== undefined) return { relations: `relation ${repeated || '(empty)'} is declared twice` };
  const body = bodyOf(draft);
  const found: Record<string, string> = {};
  const parsed = CreateNamespaceSchema.safeParse(body);
  for (const issue of parsed.success ? [] : parsed.error.issues) {
    const field = String(issue.path[0]);
    found[field] ??= field === 'relations' && issue.path.length > 1 ? `${issue.path.slice(1).join('.')}: ${issue.message}` : issue.message;
  }
  // The engine's checks need well-formed relations, whatever the name is.
  if (found.relations === undefined && body.relations) {
    try {
      validateRelations(body.relations);
      assertNoExclusionCycle([...others.filter((ns) => ns.name !== body.name), { name: body.name, relations: body.relations }]);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // The row is the place: the path (relations.viewer.requires[0]) would repeat it.
      found.relations = error.errors?.[0]?.message ?? error.detail;
    }
  }
  return found;
}
