import { useState } from 'preact/hooks';
import { KEY_SCOPES } from '../../../contract/index.ts';
import type { CreatedKey } from '../../client/index.ts';
import type { PageProps } from '../app.tsx';
import { Choices, Confirm, Empty, Field, FormProblem, Loading, LoadProblem, Notice, Secret, Submit, useLoad, useSubmit, when } from '../ui.tsx';

interface KeySummary {
  id: string;
  label: string;
}

export function KeysPage({ session }: PageProps) {
  const list = useLoad(() => session.api.keys.list());
  const [revoking, setRevoking] = useState<KeySummary | null>(null);
  const [notice, setNotice] = useState('');
  return (
    <>
      <section aria-labelledby="keys-list">
        <h2 id="keys-list">Live keys</h2>
        {notice && <Notice>{notice}</Notice>}
        {list.loading && <Loading what="keys" />}
        <LoadProblem problem={list.problem} />
        {list.data?.keys.length === 0 && <Empty>No live keys: create one below.</Empty>}
        {list.data && list.data.keys.length > 0 && (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="API keys (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Id</th>
                  <th scope="col">Label</th>
                  <th scope="col">Prefix</th>
                  <th scope="col">Scopes</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.keys.map((key) => (
                  <tr key={key.id}>
                    <td>
                      <code>{key.id}</code>
                    </td>
                    <td>{key.label || '—'}</td>
                    <td>
                      <code>{key.prefix}…</code>
                    </td>
                    <td>{key.scopes.join(', ')}</td>
                    <td>{when(key.created_at)}</td>
                    <td>{when(key.last_used_at)}</td>
                    <td>
                      <button type="button" class="danger" onClick={() => setRevoking(key)} aria-label={`Revoke key ${key.label || key.id}`}>
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {revoking && (
        <Confirm
          title={`Revoke key ${revoking.label || revoking.id}?`}
          confirmLabel="Revoke key"
          onClose={() => setRevoking(null)}
          onConfirm={async () => {
            await session.api.keys.revoke(revoking.id);
            setRevoking(null);
            setNotice(`Key ${revoking.id} revoked.`);
            list.reload();
          }}
        >
          <p>
            Requests with <code>{revoking.id}</code> are refused from now on, and OAuth sessions signed in with it end (this console's too, if you
            signed in with it).
          </p>
        </Confirm>
      )}
      <CreateKey session={session} onCreated={() => list.reload()} />
    </>
  );
}

function CreateKey({ session, onCreated }: PageProps & { onCreated: () => void }) {
  const [label, setLabel] = useState('');
  const [scopes, setScopes] = useState<string[]>(['check:read']);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const { busy, problems, run } = useSubmit(['label', 'scopes']);
  const submit = async (e: Event) => {
    e.preventDefault();
    setCreated(null);
    await run(async () => {
      setCreated(await session.api.keys.create({ label: label.trim(), scopes: scopes as CreatedKey['scopes'] }));
      setLabel('');
      onCreated();
    });
  };
  return (
    <section aria-labelledby="keys-create">
      <h2 id="keys-create">Create a key</h2>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Label" name="label" value={label} onValue={setLabel} problems={problems} placeholder="billing service" />
        <Choices legend="Scopes" name="scopes" options={KEY_SCOPES} chosen={scopes} onChosen={setScopes} problems={problems} />
        <FormProblem problems={problems} />
        <Submit busy={busy} label="Create key" busyLabel="Creating…" />
      </form>
      {created && (
        <Notice>
          <p>
            Key <code>{created.id}</code> created.
          </p>
          <Secret label="Its secret" value={created.secret} />
        </Notice>
      )}
    </section>
  );
}
