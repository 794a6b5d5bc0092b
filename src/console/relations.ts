// The namespace form's model: rows of the relation editor, the body they make, and the checks the
// server makes of it (the contract's schema, then the engine's validateRelations), run as you type.
import { CreateNamespaceSchema } from '../../contract/namespaces.ts';
import { validateRelations } from '../engine/definition-checks.ts';
import { DomainError } from '../errors.ts';

export interface RelationRow {
  name: string;
  /** Comma- or space-separated entries: R or T->R. */
  includes: string;
}

export interface NamespaceDraft {
  name: string;
  /** An open namespace declares no relations: any relation, nothing inherited. */
  open: boolean;
  rows: RelationRow[];
}

const entriesOf = (includes: string): string[] => includes.split(/[\s,]+/).filter(Boolean);

/** The body POST /v1/namespaces is sent. */
export function bodyOf(draft: NamespaceDraft) {
  if (draft.open) return { name: draft.name.trim() };
  const relations: Record<string, { includes?: string[] }> = {};
  for (const row of draft.rows) {
    const entries = entriesOf(row.includes);
    relations[row.name.trim()] = entries.length > 0 ? { includes: entries } : {};
  }
  return { name: draft.name.trim(), relations };
}

/** What the server would refuse in the draft, by form field (`name`, `relations`); empty when it would accept it. */
export function draftProblems(draft: NamespaceDraft): Record<string, string> {
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
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      found.relations = error.detail;
    }
  }
  return found;
}
