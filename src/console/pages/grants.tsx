import { useState } from 'preact/hooks';
import type { Grant, GrantsQuery } from '../../client/index.ts';
import type { PageProps } from '../app.tsx';
import { importGrants, parseNdjson, type ImportProgress, type ParsedFile } from '../ndjson.ts';
import { Confirm, Empty, Field, FormProblem, LoadProblem, Loading, Notice, useId, useLoad, useSubmit, when } from '../ui.tsx';

const PAGE_SIZE = 50;
const FILTERS = ['subject', 'relation', 'object', 'namespace'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;
const NO_FILTERS: Filters = { subject: '', relation: '', object: '', namespace: '' };
const TRIPLE_PROBLEMS = {
  'invalid-subject': 'subject',
  'agent-not-found': 'subject',
  'invalid-object': 'object',
  'namespace-not-found': 'object',
  'unknown-relation': 'relation',
};

const queryOf = (filters: Filters): GrantsQuery => Object.fromEntries(Object.entries(filters).flatMap(([k, v]) => (v.trim() ? [[k, v.trim()]] : [])));

export function GrantsPage({ session }: PageProps) {
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  // The cursors of the pages seen so far: Previous goes back along them.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const filterForm = useSubmit(FILTERS, { 'invalid-subject': 'subject', 'invalid-object': 'object', 'namespace-not-found': 'namespace' });
  const page = useLoad(() => session.api.grants.list({ ...queryOf(filters), limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) }), [filters, cursor]);
  const [revoking, setRevoking] = useState<Grant | null>(null);
  const [notice, setNotice] = useState('');

  const applyFilters = async (e: Event) => {
    e.preventDefault();
    // Asked once here so that a bad filter's problem lands at its field.
    if (await filterForm.run(() => session.api.grants.list({ ...queryOf(draft), limit: 1 }))) {
      setFilters(draft);
      setCursors([undefined]);
    }
  };
  const reload = () => {
    setCursors([undefined]);
    page.reload();
  };

  return (
    <>
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
          <button type="submit" disabled={filterForm.busy}>
            Filter
          </button>
        </form>
        {notice && <Notice>{notice}</Notice>}
        {page.loading && <Loading what="grants" />}
        <LoadProblem problem={page.problem} />
        {page.data?.grants.length === 0 && (
          <Empty>
            {cursors.length > 1 || Object.values(filters).some(Boolean)
              ? 'No grant matches these filters.'
              : 'No grants yet: add one below or import a file.'}
          </Empty>
        )}
        {page.data && page.data.grants.length > 0 && (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Grants (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Subject</th>
                  <th scope="col">Relation</th>
                  <th scope="col">Object</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {page.data.grants.map((g) => (
                  <tr key={`${g.subject} ${g.relation} ${g.object}`}>
                    <td>{g.subject}</td>
                    <td>{g.relation}</td>
                    <td>{g.object}</td>
                    <td>{when(g.created_at)}</td>
                    <td>
                      <button
                        type="button"
                        class="danger"
                        onClick={() => setRevoking(g)}
                        aria-label={`Revoke ${g.subject} ${g.relation} ${g.object}`}
                      >
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div class="pager">
          <button type="button" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>
            Previous page
          </button>
          <button
            type="button"
            disabled={!page.data?.next_cursor}
            onClick={() => page.data?.next_cursor && setCursors([...cursors, page.data.next_cursor])}
          >
            Next page
          </button>
        </div>
      </section>
      {revoking && (
        <Confirm
          title="Revoke this grant?"
          confirmLabel="Revoke grant"
          onClose={() => setRevoking(null)}
          onConfirm={async () => {
            const { subject, relation, object } = revoking;
            await session.api.grants.revoke({ subject, relation, object });
            setRevoking(null);
            setNotice(`Revoked ${subject} ${relation} ${object}.`);
            reload();
          }}
        >
          <p>
            <code>{revoking.subject}</code> will no longer hold <code>{revoking.relation}</code> on <code>{revoking.object}</code> directly.
          </p>
        </Confirm>
      )}
      <AddGrant session={session} onAdded={(text) => (setNotice(text), reload())} />
      <ImportGrants session={session} onImported={reload} />
    </>
  );
}

function AddGrant({ session, onAdded }: PageProps & { onAdded: (text: string) => void }) {
  const [triple, setTriple] = useState({ subject: '', relation: '', object: '' });
  const { busy, problems, run } = useSubmit(['subject', 'relation', 'object'], TRIPLE_PROBLEMS);
  const submit = async (e: Event) => {
    e.preventDefault();
    const input = { subject: triple.subject.trim(), relation: triple.relation.trim(), object: triple.object.trim() };
    if (await run(() => session.api.grants.create(input))) {
      setTriple({ subject: '', relation: '', object: '' });
      onAdded(`Granted ${input.subject} ${input.relation} on ${input.object}.`);
    }
  };
  return (
    <section aria-labelledby="grants-add">
      <h2 id="grants-add">Add a grant</h2>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field
          label="Subject"
          name="subject"
          value={triple.subject}
          onValue={(subject) => setTriple({ ...triple, subject })}
          problems={problems}
          placeholder="user:alice"
        />
        <Field
          label="Relation"
          name="relation"
          value={triple.relation}
          onValue={(relation) => setTriple({ ...triple, relation })}
          problems={problems}
          placeholder="viewer"
        />
        <Field
          label="Object"
          name="object"
          value={triple.object}
          onValue={(object) => setTriple({ ...triple, object })}
          problems={problems}
          placeholder="document:q3"
        />
        {/* Time-bound grants: the inputs for expires_at and not_before go here once the contract's
            grant has them (docs/console.md#grants); the contract on main has neither yet. */}
        <FormProblem problems={problems} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Adding…' : 'Add grant'}
        </button>
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
