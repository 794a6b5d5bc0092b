// The console's building blocks: labelled fields with their problem, notices, dialogs.
import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { NO_PROBLEMS, problemsOf, type FormProblems, type Shown } from './problems.ts';

let lastId = 0;
/** An id unique in the page, stable across renders of one component. */
export function useId(prefix: string): string {
  const [id] = useState(() => `${prefix}-${++lastId}`);
  return id;
}

function ProblemText({ id, problem }: { id?: string; problem: Shown }) {
  return (
    <p class="problem" id={id} role="alert">
      <strong>{problem.title}</strong>
      {problem.detail ? `: ${problem.detail}` : ''}
    </p>
  );
}

/** What the console's fields pass on to their input. */
interface InputProps {
  placeholder?: string;
  required?: boolean;
  /** `multiline`: a text that wraps and grows with what is typed, so that all of it shows (a list of references). */
  type?: 'text' | 'datetime-local' | 'multiline';
}

/** A labelled input; its problem (if any) is shown beneath it and announced. */
export function Field(
  props: { label: string; name: string; value: string; onValue: (value: string) => void; problems: FormProblems; hint?: string } & InputProps,
) {
  const { label, name, value, onValue, problems, hint, type = 'text', ...rest } = props;
  const id = useId(name);
  const given = problems.fields[name];
  // A problem is about the value that was sent: once the field is edited, it no longer applies.
  const sent = useRef<{ given: Shown | undefined; value: string }>({ given, value });
  if (sent.current.given !== given) sent.current = { given, value };
  const problem = given && sent.current.value === value ? given : undefined;
  const described = [hint ? `${id}-hint` : '', problem ? `${id}-problem` : ''].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {type === 'multiline' ? (
        <textarea
          id={id}
          name={name}
          value={value}
          rows={1}
          onInput={(e) => onValue((e.target as HTMLTextAreaElement).value)}
          aria-invalid={problem ? 'true' : undefined}
          aria-describedby={described || undefined}
          autocomplete="off"
          spellcheck={false}
          {...rest}
        />
      ) : (
        <input
          id={id}
          name={name}
          value={value}
          onInput={(e) => onValue((e.target as HTMLInputElement).value)}
          aria-invalid={problem ? 'true' : undefined}
          aria-describedby={described || undefined}
          autocomplete="off"
          spellcheck={false}
          {...rest}
          {...(type === 'datetime-local' ? { type } : { type: 'text' as const })}
        />
      )}
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {problem && <ProblemText id={`${id}-problem`} problem={problem} />}
    </div>
  );
}

type TextKeys<T> = { [K in keyof T]: T[K] extends string ? K : never }[keyof T] & string;

/** What a `Field` of one text of a form needs: its name, its value, and `onValue`, which sets that text of the form. */
export function bind<T>(form: T, setForm: (form: T) => void, name: TextKeys<T>) {
  return { name, value: form[name] as string, onValue: (value: string) => setForm({ ...form, [name]: value }) };
}

/** Check boxes for a set of values (scopes), as one labelled group. */
export function Choices(props: {
  legend: string;
  name: string;
  options: readonly string[];
  chosen: string[];
  onChosen: (chosen: string[]) => void;
  problems: FormProblems;
}) {
  const { legend, name, options, chosen, onChosen, problems } = props;
  const id = useId(name);
  const problem = problems.fields[name];
  return (
    <fieldset class="field" aria-describedby={problem ? `${id}-problem` : undefined}>
      <legend>{legend}</legend>
      {options.map((option) => (
        <label class="choice" key={option}>
          <input
            type="checkbox"
            name={name}
            value={option}
            checked={chosen.includes(option)}
            onChange={(e) => onChosen((e.target as HTMLInputElement).checked ? [...chosen, option] : chosen.filter((c) => c !== option))}
          />
          {option}
        </label>
      ))}
      {problem && <ProblemText id={`${id}-problem`} problem={problem} />}
    </fieldset>
  );
}

/** Where the problems about a grant's triple land (a validation problem's issues name their fields by path). */
export const TRIPLE_PROBLEMS: Record<string, string> = {
  'invalid-subject': 'subject',
  'agent-not-found': 'subject',
  'invalid-object': 'object',
  'namespace-not-found': 'object',
  'unknown-relation': 'relation',
};

export interface Triple {
  subject: string;
  relation: string;
  object: string;
}
export const NO_TRIPLE: Triple = { subject: '', relation: '', object: '' };
export const trimmed = (t: Triple): Triple => ({ subject: t.subject.trim(), relation: t.relation.trim(), object: t.object.trim() });

/** The Subject, Relation and Object fields of the forms that write or ask about a grant. */
export function TripleFields({ value, onValue, problems }: { value: Triple; onValue: (value: Triple) => void; problems: FormProblems }) {
  return (
    <>
      <Field label="Subject" {...bind(value, onValue, 'subject')} problems={problems} placeholder="user:alice" />
      <Field label="Relation" {...bind(value, onValue, 'relation')} problems={problems} placeholder="viewer" />
      <Field label="Object" {...bind(value, onValue, 'object')} problems={problems} placeholder="document:q3" />
    </>
  );
}

/** A form's submit button, which says what is happening while the call runs. */
export function Submit({ busy, label, busyLabel, primary = true }: { busy: boolean; label: string; busyLabel: string; primary?: boolean }) {
  return (
    <button type="submit" class={primary ? 'primary' : undefined} disabled={busy}>
      {busy ? busyLabel : label}
    </button>
  );
}

/** The problem that names no field, above the form's button. */
export function FormProblem({ problems }: { problems: FormProblems }) {
  return problems.form ? <ProblemText problem={problems.form} /> : null;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/** What an empty list says: why it is empty and what to do next. */
export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div class="notice" role="status">
      {children}
    </div>
  );
}

const NoticeClearer = createContext<() => void>(() => undefined);

/**
 * The part of a page whose success notice (`Notice`) a new submission of any of its forms makes stale:
 * `clear` is called as each starts, so that a new problem is never shown beside an old success.
 */
export function NoticeScope({ clear, children }: { clear: () => void; children: ComponentChildren }) {
  return <NoticeClearer.Provider value={clear}>{children}</NoticeClearer.Provider>;
}

/**
 * A form's submission: `busy` while the call runs, its problems spread over `fields` afterwards.
 * `run` resolves true when the call succeeded. Starting one clears the notice of its `NoticeScope`.
 */
export function useSubmit(fields: readonly string[], byType: Record<string, string> = {}) {
  const [busy, setBusy] = useState(false);
  const [problems, setProblems] = useState<FormProblems>(NO_PROBLEMS);
  const clearNotice = useContext(NoticeClearer);
  const run = async (action: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setProblems(NO_PROBLEMS);
    clearNotice();
    try {
      await action();
      return true;
    } catch (error) {
      setProblems(problemsOf(error, fields, byType));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, problems, setProblems, run };
}

/** Loads `load` on mount and whenever `deps` change; `reload` loads again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []) {
  const [state, setState] = useState<{ data?: T; problem?: Shown; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (error: unknown) => current && setState({ problem: problemsOf(error, []).form!, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, round]);
  return { ...state, reload: () => setRound((r) => r + 1) };
}

export function LoadProblem({ problem }: { problem: Shown | undefined }) {
  return problem ? <ProblemText problem={problem} /> : null;
}

/** A secret shown once, with a button that copies it. */
export function Secret({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState<string>('');
  const id = useId('secret');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('The browser refused the clipboard: select the text and copy it.');
    }
  };
  return (
    <div class="secret">
      <label for={id}>{label} (shown once: store it now)</label>
      <div class="secret-row">
        <input id={id} readOnly value={value} onFocus={(e) => (e.target as HTMLInputElement).select()} />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p class="hint" role="status">
        {copied}
      </p>
    </div>
  );
}

/** What a create form made: its id, and its secret (shown once) when it has one. */
export function Created({ what, id, secret }: { what: string; id: string; secret?: string }) {
  return (
    <Notice>
      <p>
        {what} <code>{id}</code> created.
      </p>
      {secret && <Secret label="Its secret" value={secret} />}
    </Notice>
  );
}

/**
 * A modal confirmation (<dialog>: focus moves into it, Escape cancels, focus returns after).
 * `onConfirm` runs the action; its problem stays shown in the dialog.
 */
export function Confirm(props: {
  title: string;
  confirmLabel: string;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  children: ComponentChildren;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const { busy, problems, run } = useSubmit([]);
  const titleId = useId('dialog-title');
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={props.onClose}>
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
      <FormProblem problems={problems} />
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={() => void run(props.onConfirm)}>
          {busy ? 'Working…' : props.confirmLabel}
        </button>
        <button type="button" onClick={() => ref.current?.close()}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

/**
 * Keyset pages walked forward and back: the cursors of the pages seen so far, the last one current.
 * `reset` returns to the first page (after a write, or a new query).
 */
export function useCursors() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  return {
    cursor: cursors[cursors.length - 1],
    first: cursors.length === 1,
    next: (cursor: string) => setCursors([...cursors, cursor]),
    previous: () => setCursors(cursors.slice(0, -1)),
    reset: () => setCursors([undefined]),
  };
}

/** Previous and Next buttons over `useCursors`; Next needs the page's `next_cursor`. */
export function Pager({ pages, nextCursor, label }: { pages: ReturnType<typeof useCursors>; nextCursor: string | null | undefined; label: string }) {
  return (
    <div class="pager" role="group" aria-label={label}>
      <button type="button" disabled={pages.first} onClick={pages.previous}>
        Previous page
      </button>
      <button type="button" disabled={!nextCursor} onClick={() => nextCursor && pages.next(nextCursor)}>
        Next page
      </button>
    </div>
  );
}

/**
 * A datetime-local input's value (the browser's local time, no zone) as the RFC 3339 UTC instant the
 * API takes; empty is absent. A value the browser could not read goes as typed, for the server to name.
 */
export function utcOf(local: string): string | undefined {
  if (!local) return undefined;
  const ms = new Date(local).getTime();
  return Number.isNaN(ms) ? local : new Date(ms).toISOString();
}

export const when = (timestamp: string | null): string => (timestamp ? new Date(timestamp).toLocaleString() : '—');
