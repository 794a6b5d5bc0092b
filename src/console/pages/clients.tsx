import { useState } from 'preact/hooks';
import { KEY_SCOPES } from '../../../contract/index.ts';
import type { CreatedOAuthClient, OAuthClientInput } from '../../client/index.ts';
import type { PageProps } from '../app.tsx';
import {
  Choices,
  Confirm,
  Empty,
  Field,
  FormProblem,
  Loading,
  LoadProblem,
  Notice,
  Secret,
  Submit,
  useId,
  useLoad,
  useSubmit,
  when,
} from '../ui.tsx';

interface ClientSummary {
  client_id: string;
  name: string;
}

export function ClientsPage({ session }: PageProps) {
  const list = useLoad(() => session.api.oauth.clients.list());
  const [deleting, setDeleting] = useState<ClientSummary | null>(null);
  const [notice, setNotice] = useState('');
  return (
    <>
      <section aria-labelledby="clients-list">
        <h2 id="clients-list">Current clients</h2>
        {notice && <Notice>{notice}</Notice>}
        {list.loading && <Loading what="OAuth clients" />}
        <LoadProblem problem={list.problem} />
        {list.data?.clients.length === 0 && <Empty>No OAuth clients: create one below for an integration or an agent.</Empty>}
        {list.data && list.data.clients.length > 0 && (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="OAuth clients (scrolls sideways)">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Client id</th>
                  <th scope="col">Type</th>
                  <th scope="col">Scopes</th>
                  <th scope="col">Redirect URIs</th>
                  <th scope="col">Agent</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.clients.map((client) => (
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
                    <td>
                      <button type="button" class="danger" onClick={() => setDeleting(client)} aria-label={`Delete client ${client.name}`}>
                        Delete
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {deleting && (
        <Confirm
          title={`Delete client ${deleting.name}?`}
          confirmLabel="Delete client"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await session.api.oauth.clients.delete(deleting.client_id);
            setDeleting(null);
            setNotice(`Client ${deleting.client_id} deleted.`);
            list.reload();
          }}
        >
          <p>
            The client and every token it holds stop working at once. If it is this console's client, this session ends when its token is next used.
          </p>
        </Confirm>
      )}
      <CreateClient session={session} onCreated={() => list.reload()} />
    </>
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
        <Field
          label="Name (shown on the consent page)"
          name="name"
          value={form.name}
          onValue={(v) => setForm({ ...form, name: v })}
          problems={problems}
        />
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
          name="redirect_uris"
          value={form.redirect_uris}
          onValue={(v) => setForm({ ...form, redirect_uris: v })}
          problems={problems}
          hint="Separated by spaces; required for a public client, compared byte for byte."
        />
        <Choices legend="Scopes" name="scopes" options={KEY_SCOPES} chosen={scopes} onChosen={setScopes} problems={problems} />
        <Field
          label="Agent (optional)"
          name="agent"
          value={form.agent}
          onValue={(v) => setForm({ ...form, agent: v })}
          problems={problems}
          hint="A registered agent's external id: the client's tokens then act as agent:<id>."
        />
        <FormProblem problems={problems} />
        <Submit busy={busy} label="Create client" busyLabel="Creating…" />
      </form>
      {created && (
        <Notice>
          <p>
            Client <code>{created.client_id}</code> created.
          </p>
          {created.client_secret && <Secret label="Its secret" value={created.client_secret} />}
        </Notice>
      )}
    </section>
  );
}
