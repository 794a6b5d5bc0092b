import { useState } from 'preact/hooks';
import type { Grant, GrantsQuery } from '../../client/index.ts';
import type { PageProps } from '../session.ts';
import { importGrants, parseNdjson, type ImportProgress, type ParsedFile } from '../ndjson.ts';
import { Listed, RowAction, Table, useListWrites } from '../lists.tsx';
import {
  bind,
  Confirm,
  Empty,
  Field,
  FormProblem,
  NO_TRIPLE,
  Notice,
  NoticeScope,
  Pager,
  Submit,
  TRIPLE_PROBLEMS,
  trimmed,
  TripleFields,
  useCursors,
  useId,
  useLoad,
  useSubmit,
  utcOf,
  when,
} from '../ui.tsx';

const PAGE_SIZE = 50;
const FILTERS = ['subject', 'relation', 'object', 'namespace'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;
const NO_FILTERS: Filters = { subject: '', relation: '', object: '', namespace: '' };

const queryOf = (filters: Filters): GrantsQuery => Object.fromEntries(Object.entries(filters).flatMap(([k, v]) => (v.trim() ? [[k, v.trim()]] : [])));

export function GrantsPage({ session }: PageProps) {
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const pages = useCursors();
  const { cursor } = pages;
  const filterForm = useSubmit(FILTERS, { 'invalid-subject': 'subject', 'invalid-object': 'object', 'namespace-not-found': 'namespace' });
  const page = useLoad(() => session.api.grants.list({ ...queryOf(filters), limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) }), [filters, cursor]);

  const applyFilters = async (e: Event) => {
    e.preventDefault();
    // Asked once here so that a bad filter's problem lands at its field.
    if (await filterForm.run(() => session.api.grants.list({ ...queryOf(draft), limit: 1 }))) {
      setFilters(draft);
      pages.reset();
    }
  };
  const reload = () => (pages.reset(), page.reload());
  const writes = useListWrites<Grant>(reload);
  const revoking = writes.pending;

  // The create form comes first: below a page of 50 grants it would be out of sight.
  return (
    <NoticeScope clear={writes.clear}>
      <CreateGrant session={session} onCreated={writes.done} />
      <section aria-labelledby="grants-list">
        <h2 id="grants-list">Current grants</h2>
        <form class="filters" onSubmit={(e) => void applyFilters(e)} noValidate role="search" aria-label="Filter grants">
          {FILTERS.map((name) => (
            <Field
              key={name}
              label={name === 'namespace' ? "Object's namespace" : name[0]!.toUpperCase() + name.slice(1)}
              name={name}
              value={draft[name]}
              onValue={(value) => setDraft({ ...draft, [name]: value })}
              problems={filterForm.problems}
            />
          ))}
          <FormProblem problems={filterForm.problems} />
          <Submit busy={filterForm.busy} label="Filter" busyLabel="Filtering…" primary={false} />
        </form>
        {writes.notice && <Notice>{writes.notice}</Notice>}
        <Listed
          state={page}
          what="grants"
          items={page.data?.grants}
          empty={
            !pages.first || Object.values(filters).some(Boolean)
              ? 'No grant matches these filters.'
              : 'No grants yet: create one above, or import a file below.'
          }
        >
          {(grants) => (
            <Table label="Grants" columns={['Subject', 'Relation', 'Object', 'Created', 'In force from', 'Expires']} actions>
              {grants.map((g) => (
                <tr key={`${g.subject} ${g.relation} ${g.object}`}>
                  <td>{g.subject}</td>
                  <td>{g.relation}</td>
                  <td>{g.object}</td>
                  <td>{when(g.created_at)}</td>
                  <td>{g.not_before ? when(g.not_before) : 'creation'}</td>
                  <td>{g.expires_at ? when(g.expires_at) : 'never'}</td>
                  <RowAction label="Revoke" name={`Revoke ${g.subject} ${g.relation} ${g.object}`} onClick={() => writes.ask(g)} />
                </tr>
              ))}
            </Table>
          )}
        </Listed>
        <Pager pages={pages} nextCursor={page.data?.next_cursor} label="Grant pages" />
      </section>
      {revoking && (
        <Confirm
          title="Revoke this grant?"
          confirmLabel="Revoke grant"
          onClose={writes.cancel}
          onConfirm={async () => {
            const { subject, relation, object } = revoking;
            await session.api.grants.revoke({ subject, relation, object });
            writes.done(`Revoked ${subject} ${relation} ${object}.`);
          }}
        >
          <p>
            <code>{revoking.subject}</code> will no longer hold <code>{revoking.relation}</code> on <code>{revoking.object}</code> directly.
          </p>
        </Confirm>
      )}
      <ImportGrants session={session} onImported={reload} />
    </NoticeScope>
  );
}

/** The create form's window: datetime-local values, in the browser's time zone. */
const NO_WINDOW = { not_before: '', expires_at: '' };

function CreateGrant({ session, onCreated }: PageProps & { onCreated: (text: string) => void }) {
  const [triple, setTriple] = useState(NO_TRIPLE);
  const [validity, setValidity] = useState(NO_WINDOW);
  const { busy, problems, run } = useSubmit(['subject', 'relation', 'object', 'not_before', 'expires_at'], TRIPLE_PROBLEMS);
  const submit = async (e: Event) => {
    e.preventDefault();
    const input = trimmed(triple);
    const [notBefore, expiresAt] = [utcOf(validity.not_before), utcOf(validity.expires_at)];
    const times = { ...(notBefore ? { not_before: notBefore } : {}), ...(expiresAt ? { expires_at: expiresAt } : {}) };
    if (await run(() => session.api.grants.create({ ...input, ...times }))) {
      setTriple(NO_TRIPLE);
      setValidity(NO_WINDOW);
      const span = [notBefore && `from ${when(notBefore)}`, expiresAt && `until ${when(expiresAt)}`].filter(Boolean).join(' ');
      onCreated(`Created grant ${input.subject} ${input.relation} on ${input.object}${span ? ` ${span}` : ''}.`);
    }
  };
  return (
    <section aria-labelledby="grants-create">
      <h2 id="grants-create">Create a grant</h2>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <TripleFields value={triple} onValue={setTriple} problems={problems} />
        <Field
          label="In force from (optional)"
          type="datetime-local"
          {...bind(validity, setValidity, 'not_before')}
          problems={problems}
          hint="Your local time. Empty: at once."
        />
        <Field
          label="Expires at (optional)"
          type="datetime-local"
          {...bind(validity, setValidity, 'expires_at')}
          problems={problems}
          hint="Your local time; from then on the grant confers nothing. Empty: never."
        />
        <FormProblem problems={problems} />
        <Submit busy={busy} label="Create grant" busyLabel="Creating…" />
      </form>
    </section>
  );
}

function ImportGrants({ session, onImported }: PageProps & { onImported: () => void }) {
  const fileId = useId('import-file');
  const [parsed, setParsed] = useState<(ParsedFile & { name: string }) | null>(null);
  const [progress, setProgress] = useState<ImportProgress | null>(null);
  const [done, setDone] = useState<ImportProgress | null>(null);
  const { busy, problems, run } = useSubmit([]);

  const choose = async (e: Event) => {
    const file = (e.target as HTMLInputElement).files?.[0];
    setProgress(null);
    setDone(null);
    setParsed(file ? { ...parseNdjson(await file.text()), name: file.name } : null);
  };
  const start = async () => {
    if (!parsed) return;
    const state = { sent: 0, written: 0 };
    setProgress(state);
    const ok = await run(async () => {
      await importGrants(session.api, parsed.grants, (p) => (Object.assign(state, p), setProgress(p)));
    });
    setDone(state);
    if (ok || state.sent > 0) onImported();
  };
  const total = parsed?.grants.length ?? 0;
  return (
    <section aria-labelledby="grants-import">
      <h2 id="grants-import">Import grants</h2>
      <div class="field">
        <label for={fileId}>NDJSON file: one {'{"subject", "relation", "object"}'} per line</label>
        <input id={fileId} type="file" accept=".ndjson,.jsonl,.json,application/x-ndjson" onChange={(e) => void choose(e)} />
      </div>
      {parsed && parsed.invalid.length > 0 && (
        <div class="problem" role="alert">
          <strong>
            {parsed.invalid.length} line{parsed.invalid.length === 1 ? ' is' : 's are'} not a grant; nothing was imported.
          </strong>
          <ul>
            {parsed.invalid.slice(0, 10).map((i) => (
              <li key={i.line}>
                line {i.line}: {i.message}
              </li>
            ))}
          </ul>
          {parsed.invalid.length > 10 && <p>…and {parsed.invalid.length - 10} more.</p>}
        </div>
      )}
      {parsed?.invalid.length === 0 && total === 0 && <Empty>{parsed.name} holds no grant.</Empty>}
      {parsed?.invalid.length === 0 && total > 0 && !done && (
        <button type="button" class="primary" disabled={busy} onClick={() => void start()}>
          Import {total.toLocaleString()} grants from {parsed.name}
        </button>
      )}
      {progress && (
        <div class="field">
          <label for={`${fileId}-progress`}>Imported</label>
          <progress id={`${fileId}-progress`} max={total} value={progress.sent}>
            {progress.sent} of {total}
          </progress>
          <p class="hint">
            {progress.sent.toLocaleString()} of {total.toLocaleString()}
          </p>
        </div>
      )}
      <FormProblem problems={problems} />
      {done && (
        <Notice>
          {done.sent === total
            ? 'Import finished'
            : `Import stopped after ${done.sent.toLocaleString()} of ${total.toLocaleString()} grants (each batch is all or nothing)`}
          : {done.written.toLocaleString()} new, {(done.sent - done.written).toLocaleString()} already present.
        </Notice>
      )}
    </section>
  );
}
