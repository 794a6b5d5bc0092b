import { useState } from 'preact/hooks';
import type { CheckInput } from '../../client/index.ts';
import type { PageProps } from '../app.tsx';
import { Field, FormProblem, useSubmit } from '../ui.tsx';

/**
 * The check playground: asks POST /v1/check and shows the answer. Below the answer, the two panels
 * that follow it once the API has them (docs/console.md#check): the explain path drawn as a small
 * graph (POST /v1/check/explain) and who can access the object (GET /v1/subjects). Each is a
 * component taking the asked check, rendered after <Answer>; neither endpoint exists on main yet.
 */
export function CheckPage({ session }: PageProps) {
  const [input, setInput] = useState<CheckInput>({ subject: '', relation: '', object: '' });
  const [answer, setAnswer] = useState<{ asked: CheckInput; allowed: boolean } | null>(null);
  const { busy, problems, run } = useSubmit(['subject', 'relation', 'object'], {
    'invalid-subject': 'subject',
    'invalid-object': 'object',
    'namespace-not-found': 'object',
    'unknown-relation': 'relation',
  });
  const submit = async (e: Event) => {
    e.preventDefault();
    const asked = { subject: input.subject.trim(), relation: input.relation.trim(), object: input.object.trim() };
    setAnswer(null);
    await run(async () => setAnswer({ asked, allowed: (await session.api.check(asked)).allowed }));
  };
  return (
    <>
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field
          label="Subject"
          name="subject"
          value={input.subject}
          onValue={(subject) => setInput({ ...input, subject })}
          problems={problems}
          placeholder="user:alice"
        />
        <Field
          label="Relation"
          name="relation"
          value={input.relation}
          onValue={(relation) => setInput({ ...input, relation })}
          problems={problems}
          placeholder="viewer"
        />
        <Field
          label="Object"
          name="object"
          value={input.object}
          onValue={(object) => setInput({ ...input, object })}
          problems={problems}
          placeholder="document:q3"
        />
        <FormProblem problems={problems} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Check'}
        </button>
      </form>
      <div aria-live="polite">
        {answer && (
          <p class={answer.allowed ? 'answer allowed' : 'answer denied'}>
            <strong>{answer.allowed ? 'Allowed' : 'Denied'}</strong>: <code>{answer.asked.subject}</code> {answer.allowed ? 'holds' : 'does not hold'}{' '}
            <code>{answer.asked.relation}</code> on <code>{answer.asked.object}</code>.
          </p>
        )}
      </div>
    </>
  );
}
