import { useState } from 'preact/hooks';
import type { Explanation } from '../../client/index.ts';
import type { PageProps } from '../session.ts';
import { Listed } from '../lists.tsx';
import {
  FormProblem,
  Loading,
  NO_TRIPLE,
  Pager,
  Submit,
  TRIPLE_PROBLEMS,
  trimmed,
  TripleFields,
  useCursors,
  useId,
  useLoad,
  useSubmit,
  type Triple,
} from '../ui.tsx';

type Step = Explanation['path'][number];
type Reason = NonNullable<Explanation['reason']>;

/** What each denial reason means, said to the person who asked (docs/console.md#check). */
const REASONS: Record<Reason, string> = {
  'no-path': 'no chain of grants leads from the subject to the object.',
  'agent-not-registered': 'the subject is an agent that is not registered (or was killed).',
  'agent-scope': "a chain of grants exists, but the agent's scope does not cover this relation.",
  'not-yet-valid': 'only grants that are not yet in force (their not_before is ahead) would confer it.',
  expired: 'only grants that have expired would confer it.',
  excluded: 'grants confer it, but the subject also holds a relation that this one excludes, as the chain below shows.',
  'requirement-not-met': 'grants confer it, but the subject does not hold everything this relation requires.',
};

const SUBJECTS_PAGE = 20;

/**
 * The check playground: asks POST /v1/check and POST /v1/check/explain for one triple and shows the
 * answer, its explain path drawn as a small graph (or the reason for a denial), and who can access
 * the object (GET /v1/subjects, one subject namespace at a time).
 */
export function CheckPage({ session }: PageProps) {
  const [input, setInput] = useState<Triple>(NO_TRIPLE);
  const [answer, setAnswer] = useState<{ asked: Triple; allowed: boolean; explained: Explanation } | null>(null);
  const { busy, problems, run } = useSubmit(['subject', 'relation', 'object'], TRIPLE_PROBLEMS);
  const submit = async (e: Event) => {
    e.preventDefault();
    const asked = trimmed(input);
    setAnswer(null);
    await run(async () => {
      const [checked, explained] = await Promise.all([session.api.check(asked), session.api.explain(asked)]);
      setAnswer({ asked, allowed: checked.allowed, explained });
    });
  };
  return (
    <>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <TripleFields value={input} onValue={setInput} problems={problems} />
        <FormProblem problems={problems} />
        <Submit busy={busy} label="Check" busyLabel="Checking…" />
      </form>
      <div aria-live="polite">
        {busy && <Loading what="the answer" />}
        {answer && (
          <p class={answer.allowed ? 'answer allowed' : 'answer denied'}>
            <strong>{answer.allowed ? 'Allowed' : 'Denied'}</strong>: <code>{answer.asked.subject}</code> {answer.allowed ? 'holds' : 'does not hold'}{' '}
            <code>{answer.asked.relation}</code> on <code>{answer.asked.object}</code>.
          </p>
        )}
      </div>
      {answer && <Explain explained={answer.explained} />}
      {answer && <WhoCanAccess session={session} asked={answer.asked} key={`${answer.asked.relation} ${answer.asked.object}`} />}
    </>
  );
}

function Explain({ explained }: { explained: Explanation }) {
  return (
    <section aria-labelledby="check-why">
      <h2 id="check-why">Why</h2>
      {explained.allowed ? (
        <>
          <PathGraph path={explained.path} />
          <Steps path={explained.path} label="The explain path, step by step" />
          {explained.requirements?.map((requirement, i) => (
            <div key={i} class="requirement">
              <h3>
                Requires <code>{requirement.reference}</code>
              </h3>
              <Steps path={requirement.path} label={`How the subject holds ${requirement.reference}, step by step`} />
            </div>
          ))}
        </>
      ) : (
        <>
          <p class="reason">
            Denied (<code>{explained.reason}</code>): {REASONS[explained.reason ?? 'no-path']}
          </p>
          {explained.detail !== undefined && (
            <p class="reason-detail">
              Not held: <code>{explained.detail}</code>
            </p>
          )}
          {explained.path.length > 0 && <Steps path={explained.path} label="How the subject holds the excluding relation, step by step" />}
        </>
      )}
    </section>
  );
}

/** A chain of grants in words, one step a line. */
function Steps({ path, label }: { path: Step[]; label: string }) {
  return (
    <ol class="explain-steps" aria-label={label}>
      {path.map((step, i) => (
        <li key={i}>
          <code>{step.subject}</code> holds <code>{step.relation}</code> on <code>{step.object}</code> ({viaText(step.via)})
        </li>
      ))}
    </ol>
  );
}

const viaText = (via: string): string =>
  via === 'direct'
    ? 'granted directly'
    : via === 'member'
      ? 'a direct member of the group'
      : via.startsWith('includes:')
        ? `${via.slice('includes:'.length)} is included by the relation asked`
        : `through the arrow ${via.slice('arrow:'.length)}`;

const NODE = { width: 240, height: 36, gap: 56 };

/**
 * The path as a graph: one node per subject or object, top to bottom in the order the path reaches
 * them, one edge per grant labelled with its relation and `via`. A chain's edges join neighbours;
 * any other edge bends around the right. Its title says what it is; the list below it says each step in words.
 */
function PathGraph({ path }: { path: Step[] }) {
  const titleId = useId('path-title');
  const refs = [...new Set(path.flatMap((s) => [s.subject, s.object]))];
  const y = (ref: string) => refs.indexOf(ref) * (NODE.height + NODE.gap);
  const height = refs.length * (NODE.height + NODE.gap) - NODE.gap;
  const width = NODE.width + 170;
  return (
    <svg class="explain-graph" viewBox={`0 0 ${width} ${height + 2}`} width={width} role="img" aria-labelledby={titleId}>
      <title id={titleId}>
        The explain path as a graph: {path.length} grant{path.length === 1 ? '' : 's'} from {path[0]?.subject} to {path[path.length - 1]?.object},
        listed step by step below
      </title>
      <defs>
        <marker id="arrowhead" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" class="edge-head" />
        </marker>
      </defs>
      {path.map((step, i) => {
        const [from, to] = [y(step.subject) + NODE.height, y(step.object)];
        const x = NODE.width / 2;
        const adjacent = refs.indexOf(step.object) === refs.indexOf(step.subject) + 1;
        const d = adjacent
          ? `M ${x} ${from} L ${x} ${to}`
          : `M ${NODE.width} ${from - NODE.height / 2} C ${NODE.width + 60} ${from}, ${NODE.width + 60} ${to}, ${NODE.width} ${to + NODE.height / 2}`;
        return (
          <g key={i} class="edge">
            <path d={d} marker-end="url(#arrowhead)" />
            <text x={x + 10} y={(from + to) / 2 + 4}>
              {step.relation} ({step.via})
            </text>
          </g>
        );
      })}
      {refs.map((ref) => (
        <g key={ref} class="node">
          <rect x="1" y={y(ref) + 1} width={NODE.width - 2} height={NODE.height - 2} rx="6" />
          <text x={NODE.width / 2} y={y(ref) + NODE.height / 2 + 5} text-anchor="middle">
            {ref}
          </text>
        </g>
      ))}
    </svg>
  );
}

/** Who holds the asked relation on the asked object, for one subject namespace, a page at a time. */
function WhoCanAccess({ session, asked }: PageProps & { asked: Triple }) {
  const selectId = useId('subject-namespace');
  const namespaces = useLoad(() => session.api.namespaces.list(), []);
  const [namespace, setNamespace] = useState(asked.subject.split(':')[0] || 'user');
  const pages = useCursors();
  const { cursor } = pages;
  const page = useLoad(
    () =>
      session.api.subjects.list({
        object: asked.object,
        relation: asked.relation,
        subject_namespace: namespace,
        limit: SUBJECTS_PAGE,
        ...(cursor ? { cursor } : {}),
      }),
    [namespace, cursor],
  );
  const names = namespaces.data?.namespaces.map((n) => n.name) ?? [namespace];
  return (
    <section aria-labelledby="check-who">
      <h2 id="check-who">
        Who holds <code>{asked.relation}</code> on <code>{asked.object}</code>
      </h2>
      <div class="field">
        <label for={selectId}>Subject namespace</label>
        <select
          id={selectId}
          value={namespace}
          onChange={(e) => {
            setNamespace((e.target as HTMLSelectElement).value);
            pages.reset();
          }}
        >
          {(names.includes(namespace) ? names : [namespace, ...names]).map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </div>
      <Listed
        state={{ loading: page.loading, problem: page.problem ?? namespaces.problem }}
        what="subjects"
        items={page.data?.subjects}
        empty={
          pages.first ? `No subject of namespace ${namespace} holds it: grant it on the Grants page, or pick another namespace.` : 'No more subjects.'
        }
      >
        {(subjects) => (
          <ul class="subjects" aria-label={`Subjects of namespace ${namespace}`}>
            {subjects.map((subject) => (
              <li key={subject}>
                <code>{subject}</code>
                {subject.endsWith(':*') && ` (every subject of ${namespace} that no grant names)`}
              </li>
            ))}
          </ul>
        )}
      </Listed>
      <Pager pages={pages} nextCursor={page.data?.next_cursor} label="Subject pages" />
    </section>
  );
}
