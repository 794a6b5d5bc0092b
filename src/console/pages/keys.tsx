import { useState } from 'preact/hooks';
import { KEY_SCOPES } from '../../../contract/index.ts';
import type { CreatedKey } from '../../client/index.ts';
import type { PageProps } from '../session.ts';
import { Listed, RowAction, Table, useListWrites } from '../lists.tsx';
import { Choices, Confirm, Created, FormProblem, Field, Notice, NoticeScope, Submit, useLoad, useSubmit, when } from '../ui.tsx';

interface KeySummary {
  id: string;
  label: string;
}

export function KeysPage({ session }: PageProps) {
  const list = useLoad(() => session.api.keys.list());
  const writes = useListWrites<KeySummary>(list.reload);
  const revoking = writes.pending;
  return (
    <NoticeScope clear={writes.clear}>
      <section aria-labelledby="keys-list">
        <h2 id="keys-list">Live keys</h2>
        {writes.notice && <Notice>{writes.notice}</Notice>}
        <Listed state={list} what="keys" items={list.data?.keys} empty="No live keys: create one below.">
          {(keys) => (
            <Table label="API keys" columns={['Id', 'Label', 'Prefix', 'Scopes', 'Created', 'Last used']} actions>
              {keys.map((key) => (
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
                  <RowAction label="Revoke" name={`Revoke key ${key.label || key.id}`} onClick={() => writes.ask(key)} />
                </tr>
              ))}
            </Table>
          )}
        </Listed>
      </section>
      {revoking && (
        <Confirm
          title={`Revoke key ${revoking.label || revoking.id}?`}
          confirmLabel="Revoke key"
          onClose={writes.cancel}
          onConfirm={async () => {
            await session.api.keys.revoke(revoking.id);
            writes.done(`Key ${revoking.id} revoked.`);
          }}
        >
          <p>
            Requests with <code>{revoking.id}</code> are refused from now on, and OAuth sessions signed in with it end (this console's too, if you
            signed in with it).
          </p>
        </Confirm>
      )}
      <CreateKey session={session} onCreated={list.reload} />
    </NoticeScope>
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
      {created && <Created what="Key" id={created.id} secret={created.secret} />}
    </section>
  );
}
