import { useState } from 'preact/hooks';
import type { Agent, AgentDeletion, GrantdClient } from '../../client/index.ts';
import type { PageProps } from '../session.ts';
import { Listed, RowAction, Table, useListWrites } from '../lists.tsx';
import {
  bind,
  Confirm,
  Field,
  FormProblem,
  Loading,
  LoadProblem,
  Notice,
  NoticeScope,
  Pager,
  Submit,
  useCursors,
  useLoad,
  useSubmit,
  when,
} from '../ui.tsx';

const PAGE_SIZE = 50;
/** The killswitch's preview lists this many of the agent's grants and counts up to ten times more. */
const PREVIEW_SHOWN = 10;
const PREVIEW_COUNTED = 1000;

export function AgentsPage({ session }: PageProps) {
  const pages = useCursors();
  const { cursor } = pages;
  const page = useLoad(() => session.api.agents.list({ limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) }), [cursor]);
  const writes = useListWrites<Agent>(() => (pages.reset(), page.reload()));
  return (
    <NoticeScope clear={writes.clear}>
      <section aria-labelledby="agents-list">
        <h2 id="agents-list">Registered agents</h2>
        {writes.notice && <Notice>{writes.notice}</Notice>}
        <Listed
          state={page}
          what="agents"
          items={page.data?.agents}
          empty="No agents registered: register one below, then grant to its subject agent:<id>."
        >
          {(agents) => (
            <Table label="Agents" columns={['Subject', 'Name', 'Owner', 'Scope', 'Registered']} actions>
              {agents.map((agent) => (
                <tr key={agent.external_id}>
                  <td>
                    <code>{agent.subject}</code>
                  </td>
                  <td>{agent.display_name ?? '—'}</td>
                  <td>{agent.owner ?? '—'}</td>
                  <td>{agent.scope.join(', ') || '(none)'}</td>
                  <td>{when(agent.created_at)}</td>
                  <RowAction label="Kill" name={`Kill agent ${agent.external_id}`} onClick={() => writes.ask(agent)} />
                </tr>
              ))}
            </Table>
          )}
        </Listed>
        <Pager pages={pages} nextCursor={page.data?.next_cursor} label="Agent pages" />
      </section>
      {writes.pending && (
        <Killswitch
          session={session}
          agent={writes.pending}
          onClose={writes.cancel}
          onKilled={(result) =>
            writes.done(
              `Agent ${result.external_id} killed: ${result.grants_removed} grant${result.grants_removed === 1 ? '' : 's'} removed, ` +
                `${result.clients_removed} OAuth client${result.clients_removed === 1 ? '' : 's'} removed.`,
            )
          }
        />
      )}
      <RegisterAgent session={session} onRegistered={(id) => writes.done(`Agent ${id} registered.`)} />
    </NoticeScope>
  );
}

/** What the killswitch will remove: the agent's grants (a sample and a count) and its OAuth clients. */
async function killPreview(api: GrantdClient, agent: Agent) {
  const grants: string[] = [];
  let count = 0;
  for await (const grant of api.grants.iterate({ subject: agent.subject, limit: PREVIEW_COUNTED })) {
    if (grants.length < PREVIEW_SHOWN) grants.push(`${grant.relation} on ${grant.object}`);
    if (++count >= PREVIEW_COUNTED) break;
  }
  const clients = (await api.oauth.clients.list()).clients.filter((client) => client.agent === agent.external_id);
  return {
    grants,
    count: count >= PREVIEW_COUNTED ? `${PREVIEW_COUNTED}+` : String(count),
    clients: clients.map((c) => `${c.name} (${c.client_id})`),
  };
}

function Killswitch(props: PageProps & { agent: Agent; onClose: () => void; onKilled: (result: AgentDeletion) => void }) {
  const { session, agent } = props;
  const preview = useLoad(() => killPreview(session.api, agent), [agent.external_id]);
  return (
    <Confirm
      title={`Kill agent ${agent.external_id}?`}
      confirmLabel="Kill agent"
      onClose={props.onClose}
      onConfirm={async () => props.onKilled(await session.api.agents.delete(agent.external_id))}
    >
      <p>
        The agent is removed with every grant it holds and every OAuth client acting as it, in one transaction; its tokens stop working at once. This
        cannot be undone.
      </p>
      {preview.loading && <Loading what="what will be removed" />}
      <LoadProblem problem={preview.problem} />
      {preview.data && (
        <>
          <p>
            Grants of <code>{agent.subject}</code>: {preview.data.count}
          </p>
          {preview.data.grants.length > 0 && (
            <ul>
              {preview.data.grants.map((g) => (
                <li key={g}>{g}</li>
              ))}
            </ul>
          )}
          <p>OAuth clients: {preview.data.clients.length === 0 ? 'none' : preview.data.clients.join(', ')}</p>
        </>
      )}
    </Confirm>
  );
}

function RegisterAgent({ session, onRegistered }: PageProps & { onRegistered: (id: string) => void }) {
  const blank = { external_id: '', display_name: '', owner: '', scope: '*:*' };
  const [form, setForm] = useState(blank);
  const { busy, problems, run } = useSubmit(['external_id', 'display_name', 'owner', 'scope'], { 'agent-exists': 'external_id' });
  const submit = async (e: Event) => {
    e.preventDefault();
    const input = {
      external_id: form.external_id.trim(),
      scope: form.scope.split(/[\s,]+/).filter(Boolean),
      ...(form.display_name.trim() ? { display_name: form.display_name.trim() } : {}),
      ...(form.owner.trim() ? { owner: form.owner.trim() } : {}),
    };
    if (await run(() => session.api.agents.create(input))) {
      setForm(blank);
      onRegistered(input.external_id);
    }
  };
  return (
    <section aria-labelledby="agents-register">
      <h2 id="agents-register">Register an agent</h2>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field label="External id" {...bind(form, setForm, 'external_id')} problems={problems} placeholder="release-bot" />
        <Field label="Display name (optional)" {...bind(form, setForm, 'display_name')} problems={problems} />
        <Field label="Owner (optional)" {...bind(form, setForm, 'owner')} problems={problems} placeholder="user:alice" />
        <Field
          label="Scope"
          {...bind(form, setForm, 'scope')}
          problems={problems}
          hint="What the agent may ever be granted: namespace:relation entries separated by commas; * matches any, e.g. document:viewer."
        />
        <FormProblem problems={problems} />
        <Submit busy={busy} label="Register agent" busyLabel="Registering…" />
      </form>
    </section>
  );
}
