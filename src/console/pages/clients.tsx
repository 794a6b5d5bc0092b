import { useState } from 'preact/hooks';
import { KEY_SCOPES } from '../../../contract/index.ts';
import type { CreatedOAuthClient, OAuthClientInput } from '../../client/index.ts';
import type { PageProps } from '../session.ts';
import { Listed, RowAction, Table, useListWrites } from '../lists.tsx';
import { bind, Choices, Confirm, Created, Field, FormProblem, Notice, NoticeScope, Submit, useId, useLoad, useSubmit, when } from '../ui.tsx';

interface ClientSummary {
  client_id: string;
  name: string;
}

export function ClientsPage({ session }: PageProps) {
  const list = useLoad(() => session.api.oauth.clients.list());
  const writes = useListWrites<ClientSummary>(list.reload);
  const deleting = writes.pending;
  return (
    <NoticeScope clear={writes.clear}>
      <section aria-labelledby="clients-list">
        <h2 id="clients-list">Current clients</h2>
        {writes.notice && <Notice>{writes.notice}</Notice>}
        <Listed
          state={list}
          what="OAuth clients"
          items={list.data?.clients}
          empty="No OAuth clients: create one below for an integration or an agent."
        >
          {(clients) => (
            <Table label="OAuth clients" columns={['Name', 'Client id', 'Type', 'Scopes', 'Redirect URIs', 'Agent', 'Created']} actions>
              {clients.map((client) => (
                <tr key={client.client_id}>
                  <td>{client.name}</td>
                  <td>
                    <code>{client.client_id}</code>
                  </td>
                  <td>{client.type}</td>
                  <td>{client.scopes.join(', ')}</td>
                  <td>{client.redirect_uris.join(' ') || '—'}</td>
                  <td>{client.agent ?? '—'}</td>
                  <td>{when(client.created_at)}</td>
                  <RowAction label="Delete" name={`Delete client ${client.name}`} onClick={() => writes.ask(client)} />
                </tr>
              ))}
            </Table>
          )}
        </Listed>
      </section>
      {deleting && (
        <Confirm
          title={`Delete client ${deleting.name}?`}
          confirmLabel="Delete client"
          onClose={writes.cancel}
          onConfirm={async () => {
            await session.api.oauth.clients.delete(deleting.client_id);
            writes.done(`Client ${deleting.client_id} deleted.`);
          }}
        >
          <p>
            The client and every token it holds stop working at once. If it is this console's client, this session ends when its token is next used.
          </p>
        </Confirm>
      )}
      <CreateClient session={session} onCreated={list.reload} />
    </NoticeScope>
  );
}

function CreateClient({ session, onCreated }: PageProps & { onCreated: () => void }) {
  const blank = { name: '', type: 'confidential' as OAuthClientInput['type'], redirect_uris: '', agent: '' };
  const [form, setForm] = useState(blank);
  const [scopes, setScopes] = useState<string[]>(['check:read']);
  const [created, setCreated] = useState<CreatedOAuthClient | null>(null);
  const typeId = useId('client-type');
  const { busy, problems, run } = useSubmit(['name', 'type', 'redirect_uris', 'scopes', 'agent'], { 'agent-not-found': 'agent' });
  const submit = async (e: Event) => {
    e.preventDefault();
    setCreated(null);
    const uris = form.redirect_uris.split(/\s+/).filter(Boolean);
    const input: OAuthClientInput = {
      name: form.name.trim(),
      type: form.type,
      scopes: scopes as OAuthClientInput['scopes'],
      ...(uris.length > 0 ? { redirect_uris: uris } : {}),
      ...(form.agent.trim() ? { agent: form.agent.trim() } : {}),
    };
    await run(async () => {
      setCreated(await session.api.oauth.clients.create(input));
      setForm(blank);
      onCreated();
    });
  };
  return (
    <section aria-labelledby="clients-create">
      <h2 id="clients-create">Create a client</h2>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field label="Name (shown on the consent page)" {...bind(form, setForm, 'name')} problems={problems} />
        <div class="field">
          <label for={typeId}>Type</label>
          <select
            id={typeId}
            value={form.type}
            onChange={(e) => setForm({ ...form, type: (e.target as HTMLSelectElement).value as typeof form.type })}
          >
            <option value="confidential">confidential (has a secret: servers, agents)</option>
            <option value="public">public (no secret: browser and mobile apps)</option>
          </select>
        </div>
        <Field
          label="Redirect URIs"
          {...bind(form, setForm, 'redirect_uris')}
          problems={problems}
          hint="Separated by spaces; required for a public client, compared byte for byte."
        />
        <Choices legend="Scopes" name="scopes" options={KEY_SCOPES} chosen={scopes} onChosen={setScopes} problems={problems} />
        <Field
          label="Agent (optional)"
          {...bind(form, setForm, 'agent')}
          problems={problems}
          hint="A registered agent's external id: the client's tokens then act as agent:<id>."
        />
        <FormProblem problems={problems} />
        <Submit busy={busy} label="Create client" busyLabel="Creating…" />
      </form>
      {created && <Created what="Client" id={created.client_id} secret={created.client_secret} />}
    </section>
  );
}
