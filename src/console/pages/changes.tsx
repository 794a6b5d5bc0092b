// The changes feed as a live tail (docs/console.md#the-changes-tail): the client's changes.follow, newest first.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ChangeSchema } from '../../../contract/index.ts';
import { ServiceError, type Change, type GrantdClient } from '../../client/index.ts';
import type { PageProps } from '../session.ts';
import { problemsOf, type Shown } from '../problems.ts';
import { Table } from '../lists.tsx';
import { Empty, LoadProblem, Loading, useId, when } from '../ui.tsx';

const KINDS = ChangeSchema.shape.kind.options;
/** The rows the page keeps: the newest; older ones drop off the bottom. */
const KEPT = 500;
/** Changes arriving together (a catch-up, a killswitch) are shown and announced as one batch. */
const BATCH_MS = 250;
/** The feed's largest page, so that catching up on a busy tenant takes few requests. */
const PAGE = 1000;

interface Failure {
  problem: Shown;
  expired: boolean;
}

export function ChangesPage({ session }: PageProps) {
  const [rows, setRows] = useState<Change[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [paused, setPaused] = useState(false);
  const [failure, setFailure] = useState<Failure | null>(null);
  const [kind, setKind] = useState('');
  const [announced, setAnnounced] = useState('');
  // Where the tail goes on from: the last change shown (undefined: the oldest change kept).
  const position = useRef<string | undefined>(undefined);
  const kindId = useId('kind');
  const following = !paused && !failure;

  useEffect(() => {
    if (!following) return;
    let pending: Change[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const show = () => {
      clearTimeout(timer);
      timer = undefined;
      if (pending.length === 0) return;
      const fresh = pending.reverse();
      pending = [];
      setRows((shown) => [...fresh, ...shown].slice(0, KEPT));
      setAnnounced(`${fresh.length} new ${fresh.length === 1 ? 'change' : 'changes'}`);
    };
    const take = (change: Change) => {
      position.current = change.revision;
      pending.push(change);
      timer ??= setTimeout(show, BATCH_MS);
    };
    const tail = async (api: GrantdClient, signal: AbortSignal) => {
      try {
        // The first page alone, to tell an empty feed from one still loading.
        if (position.current === undefined) {
          const page = await api.changes.list({ limit: PAGE });
          if (signal.aborted) return;
          page.changes.forEach(take);
          position.current = page.next_revision;
          show();
          setLoaded(true);
        }
        for await (const change of api.changes.follow({ after: position.current, limit: PAGE, signal })) take(change);
      } catch (error) {
        if (signal.aborted) return;
        show();
        setFailure({ problem: problemsOf(error, []).form!, expired: error instanceof ServiceError && error.type === 'changes-expired' });
      }
    };
    // A renewed session is a new client (a new access token): the tail goes on with it from where it was.
    let controller = new AbortController();
    void tail(session.api, controller.signal);
    const unwatch = session.watch((api) => {
      controller.abort();
      if (!api) return;
      controller = new AbortController();
      void tail(api, controller.signal);
    });
    return () => {
      unwatch();
      controller.abort();
      show();
    };
  }, [following]);

  // After changes-expired, as on opening the page: the rows shown would sit above a gap.
  const restart = () => {
    position.current = undefined;
    setRows([]);
    setLoaded(false);
    setFailure(null);
  };

  const shown = kind ? rows.filter((row) => row.kind === kind) : rows;
  return (
    <>
      <p>
        Every change of the tenant's grants, agents, namespaces, keys and OAuth clients, newest at the top, from the oldest change kept (7 days by
        default). New changes appear as they are made; the page keeps the newest {KEPT}.
      </p>
      <div class="tail-bar">
        <div class="field">
          <label for={kindId}>Kind</label>
          <select id={kindId} value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
            <option value="">All kinds</option>
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </div>
        {!failure && (
          <button type="button" onClick={() => setPaused(!paused)}>
            {paused ? 'Resume' : 'Pause'}
          </button>
        )}
        <p class="hint">{failure ? 'Stopped.' : paused ? 'Paused: nothing is fetched. Resume goes on from the last change shown.' : 'Following.'}</p>
      </div>
      <p class="visually-hidden" role="status">
        {announced}
      </p>
      {failure && <TailFailure failure={failure} onRetry={() => setFailure(null)} onRestart={restart} />}
      {!loaded && !failure && <Loading what="changes" />}
      {loaded && rows.length === 0 && (
        <Empty>No changes kept yet. Make a change on another page (add a grant, register an agent): it appears here.</Empty>
      )}
      {rows.length > 0 && shown.length === 0 && (
        <Empty>
          No change of kind {kind} among the {rows.length} shown: choose another kind.
        </Empty>
      )}
      {shown.length > 0 && (
        <Table label="Changes" caption="Changes, newest first" columns={['Revision', 'Time', 'Kind', 'Op', 'What', 'Actor']}>
          {shown.map((change) => (
            <tr key={change.revision}>
              <td class="revision">
                {/* The token's end is its signature, which differs from change to change; its start often does not. */}
                <code title={change.revision}>…{change.revision.slice(-8)}</code>
              </td>
              <td>{when(change.at)}</td>
              <td>{change.kind}</td>
              <td>{change.op}</td>
              <td>{whatOf(change)}</td>
              <td>{actorOf(change.actor)}</td>
            </tr>
          ))}
        </Table>
      )}
    </>
  );
}

function TailFailure({ failure, onRetry, onRestart }: { failure: Failure; onRetry: () => void; onRestart: () => void }) {
  return (
    <div class="tail-failure">
      <LoadProblem problem={failure.problem} />
      {failure.expired ? (
        <>
          <p>
            The changes after the last one shown are no longer kept, so the tail cannot go on without a gap. Start again from the oldest change kept
            (the rows shown are cleared).
          </p>
          <button type="button" onClick={onRestart}>
            Start again from the oldest kept
          </button>
        </>
      ) : (
        <>
          <p>The tail stopped. Nothing is lost: trying again goes on from the last change shown.</p>
          <button type="button" onClick={onRetry}>
            Try again
          </button>
        </>
      )}
    </div>
  );
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The changed thing in short: a grant's triple and window, an agent's id, a namespace's name, a key's id and label, a client's id. */
function whatOf(change: Change): string {
  switch (change.kind) {
    case 'grant': {
      const window = [
        change.not_before ? `from ${when(text(change.not_before))}` : '',
        change.expires_at ? `until ${when(text(change.expires_at))}` : '',
      ]
        .filter(Boolean)
        .join(' ');
      return [text(change.subject), text(change.relation), text(change.object), window].filter(Boolean).join(' ');
    }
    case 'agent':
      return text(change.subject);
    case 'namespace':
      return text(change.name);
    case 'key':
      return [text(change.id), change.label ? `(${text(change.label)})` : ''].filter(Boolean).join(' ');
    case 'oauth_client':
      return [text(change.client_id), change.name ? `(${text(change.name)})` : ''].filter(Boolean).join(' ');
  }
}

function actorOf(actor: Change['actor']): string {
  if (!actor) return 'grantd (outside the API)';
  if (actor.key_id) return `key ${actor.key_id}`;
  return [actor.client_id ? `client ${actor.client_id}` : '', actor.sub ? `for ${actor.sub}` : ''].filter(Boolean).join(' ');
}
