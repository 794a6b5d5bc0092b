import { useState } from 'preact/hooks';
import type { PageProps } from '../session.ts';
import { bodyOf, draftProblems, EMPTY_ROW, REFERENCE_LISTS, relationsByName, type NamespaceDraft, type RelationRow } from '../relations.ts';
import type { NamespaceDefinition, RelationDefinitions } from '../../engine/schema.ts';
import { Listed, Table } from '../lists.tsx';
import { bind, Field, FormProblem, Notice, NoticeScope, Submit, useId, useLoad, useSubmit, when } from '../ui.tsx';

const LIST_LABELS = { includes: 'Includes', requires: 'Requires', excludes: 'Excludes' } as const;

/** A namespace's relations on one line, by name: `viewer ⊇ editor, parent->viewer [requires org->member] [excludes blocked]`. */
const describe = (relations: RelationDefinitions | null): string =>
  relations === null
    ? 'open (any relation)'
    : relationsByName(relations)
        .map(([name, def]) =>
          [
            def.includes?.length ? `${name} ⊇ ${def.includes.join(', ')}` : name,
            ...(def.requires?.length ? [`[requires ${def.requires.join(', ')}]`] : []),
            ...(def.excludes?.length ? [`[excludes ${def.excludes.join(', ')}]`] : []),
          ].join(' '),
        )
        .join('; ') || 'no relations';

export function NamespacesPage({ session }: PageProps) {
  const list = useLoad(() => session.api.namespaces.list());
  const [created, setCreated] = useState('');
  return (
    <NoticeScope clear={() => setCreated('')}>
      <section aria-labelledby="ns-list">
        <h2 id="ns-list">Current namespaces</h2>
        <Listed state={list} what="namespaces" items={list.data?.namespaces} empty="No namespaces yet: create the first one below.">
          {(namespaces) => (
            <Table label="Namespaces" columns={['Name', 'Relations', 'Created']}>
              {namespaces.map((ns) => (
                <tr key={ns.name}>
                  <td>
                    <code>{ns.name}</code>
                  </td>
                  <td>{describe(ns.relations)}</td>
                  <td>{when(ns.created_at)}</td>
                </tr>
              ))}
            </Table>
          )}
        </Listed>
      </section>
      {created && <Notice>Namespace {created} created.</Notice>}
      <CreateNamespace
        session={session}
        others={list.data?.namespaces ?? []}
        onCreated={(name) => {
          setCreated(name);
          list.reload();
        }}
      />
    </NoticeScope>
  );
}

const EMPTY_DRAFT: NamespaceDraft = { name: '', open: false, rows: [{ ...EMPTY_ROW, name: 'owner' }] };

function CreateNamespace({ session, others, onCreated }: PageProps & { others: NamespaceDefinition[]; onCreated: (name: string) => void }) {
  const [draft, setDraft] = useState<NamespaceDraft>(EMPTY_DRAFT);
  // The live check previews what the server says; submitting still asks the server, whose problem is the word that counts.
  const { busy, problems, run } = useSubmit(['name', 'relations'], { 'invalid-namespace': 'relations', 'namespace-exists': 'name' });
  const local = draftProblems(draft, others);
  const relationsId = useId('relations');
  const setRow = (i: number, row: Partial<RelationRow>) => setDraft({ ...draft, rows: draft.rows.map((r, j) => (i === j ? { ...r, ...row } : r)) });

  const submit = async (e: Event) => {
    e.preventDefault();
    const name = draft.name.trim();
    if (await run(() => session.api.namespaces.create(bodyOf(draft)))) {
      setDraft(EMPTY_DRAFT);
      onCreated(name);
    }
  };

  return (
    <section aria-labelledby="ns-create">
      <h2 id="ns-create">Create a namespace</h2>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Name" {...bind(draft, setDraft, 'name')} problems={problems} placeholder="document" />
        <label class="choice">
          <input type="checkbox" checked={draft.open} onChange={(e) => setDraft({ ...draft, open: (e.target as HTMLInputElement).checked })} />
          Open namespace (any relation, nothing inherited)
        </label>
        {!draft.open && (
          <fieldset class="field" aria-describedby={`${relationsId}-help`}>
            <legend>Relations</legend>
            <p class="hint" id={`${relationsId}-help`}>
              Each relation may include others: <code>editor</code> (the same object's editors also hold it) or <code>parent-&gt;viewer</code> (the
              viewers of the object's parent hold it), separated by commas. Its holders must also hold everything it requires (e.g.{' '}
              <code>org-&gt;member</code>) and nothing it excludes (e.g. <code>blocked</code>), written the same way.
            </p>
            {draft.rows.map((row, i) => (
              <div class="relation-row" key={i}>
                <Field
                  label={`Relation ${i + 1}`}
                  name={`relation-${i}`}
                  value={row.name}
                  onValue={(name) => setRow(i, { name })}
                  problems={problems}
                />
                {REFERENCE_LISTS.map((list) => (
                  <Field
                    key={list}
                    label={`${LIST_LABELS[list]} of relation ${i + 1}`}
                    name={`${list}-${i}`}
                    type="multiline"
                    value={row[list]}
                    onValue={(value) => setRow(i, { [list]: value })}
                    problems={problems}
                  />
                ))}
                <button type="button" onClick={() => setDraft({ ...draft, rows: draft.rows.filter((_, j) => j !== i) })}>
                  Remove relation {i + 1}
                </button>
              </div>
            ))}
            <button type="button" onClick={() => setDraft({ ...draft, rows: [...draft.rows, EMPTY_ROW] })}>
              Add a relation
            </button>
            {problems.fields.relations ? (
              <p class="problem" role="alert">
                <strong>{problems.fields.relations.title}</strong>: {problems.fields.relations.detail}
              </p>
            ) : (
              local.relations && (
                <p class="problem" aria-live="polite">
                  {local.relations}
                </p>
              )
            )}
          </fieldset>
        )}
        <h3>Preview</h3>
        <pre class="preview" aria-label="The request body">
          {JSON.stringify(bodyOf(draft), null, 2)}
        </pre>
        <FormProblem problems={problems} />
        <Submit busy={busy} label="Create namespace" busyLabel="Creating…" />
      </form>
    </section>
  );
}
