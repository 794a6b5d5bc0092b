// The pieces of the console's lists: their loading states, their tables, and removing a row.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Shown } from './problems.ts';
import { Empty, LoadProblem, Loading } from './ui.tsx';

/** A loaded list's states in turn: loading, the load's problem, empty (saying what to do next), its items. */
export function Listed<T>(props: {
  state: { loading: boolean; problem?: Shown | undefined };
  what: string;
  items: readonly T[] | undefined;
  empty: ComponentChildren;
  children: (items: readonly T[]) => ComponentChildren;
}) {
  const { state, what, items, empty, children } = props;
  return (
    <>
      {state.loading && <Loading what={what} />}
      <LoadProblem problem={state.problem} />
      {items?.length === 0 && <Empty>{empty}</Empty>}
      {items && items.length > 0 && children(items)}
    </>
  );
}

/** A table that scrolls sideways on a narrow screen; `actions` heads a last column of row buttons (`RowAction`). */
export function Table(props: { label: string; columns: readonly string[]; caption?: string; actions?: boolean; children: ComponentChildren }) {
  const { label, columns, caption, actions = false, children } = props;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${label} (scrolls sideways)`}>
      <table>
        {caption && <caption class="visually-hidden">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column}>
                {column}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** A row's destructive button, in the last column; `name` says which row it acts on. */
export function RowAction({ label, name, onClick }: { label: string; name: string; onClick: () => void }) {
  return (
    <td>
      <button type="button" class="danger" onClick={onClick} aria-label={name}>
        {label}
      </button>
    </td>
  );
}

/**
 * A list's writes: the row whose removal awaits confirmation (`ask`, `cancel`), `done`, which closes
 * the confirmation, says what was written and loads the list again, and `clear`, which forgets what it said.
 */
export function useListWrites<T>(reload: () => void) {
  const [pending, setPending] = useState<T | null>(null);
  const [notice, setNotice] = useState('');
  return {
    pending,
    ask: (row: T) => setPending(row),
    cancel: () => setPending(null),
    notice,
    clear: () => setNotice(''),
    done: (text: string) => {
      setPending(null);
      setNotice(text);
      reload();
    },
  };
}
