// Where a failed call's problem is shown: next to the field it names, else above the form.
import { ServiceError } from '../client/index.ts';

/** A problem as the console shows it: the problem's title and detail. */
export interface Shown {
  title: string;
  detail: string;
}

/** The problems of one form: by field name, and `form` for what names no field. */
export interface FormProblems {
  fields: Record<string, Shown>;
  form?: Shown;
}

export const NO_PROBLEMS: FormProblems = { fields: {} };

const shownOf = (error: unknown): Shown =>
  error instanceof ServiceError
    ? { title: error.title, detail: error.detail }
    : { title: 'Unexpected error', detail: error instanceof Error ? error.message : String(error) };

/**
 * Spreads a failed call's problem over the form's fields. A validation problem lists the paths that
 * failed (`body.subject`, `query.limit`, `body.relations.viewer.includes.0`): each goes to the field
 * its first name after `body.` or `query.` is. Other problem types name a field by their type alone,
 * as `byType` says (e.g. `invalid-subject` → `subject`).
 */
export function problemsOf(error: unknown, fields: readonly string[], byType: Record<string, string> = {}): FormProblems {
  const shown = shownOf(error);
  if (!(error instanceof ServiceError)) return { fields: {}, form: shown };
  const issues = 'errors' in error && Array.isArray(error.errors) ? (error.errors as { path: string; message: string }[]) : [];
  const placed: Record<string, Shown> = {};
  for (const issue of issues) {
    const field = issue.path.split('.')[1];
    if (field !== undefined && fields.includes(field)) {
      placed[field] = { title: shown.title, detail: placed[field] ? `${placed[field].detail}; ${issue.message}` : issue.message };
    }
  }
  const typed = byType[error.type];
  if (typed !== undefined && fields.includes(typed) && !placed[typed]) placed[typed] = shown;
  return Object.keys(placed).length > 0 ? { fields: placed } : { fields: {}, form: shown };
}
