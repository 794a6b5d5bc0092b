import type { GrantdClient } from '../../client/index.ts';
import type { PageProps } from '../session.ts';
import { LoadProblem, Loading, useLoad } from '../ui.tsx';

/** Counting stops here: a tenant's grants may be millions, and the overview must stay quick. */
const COUNT_CAP = 10_000;

async function countOf<T>(items: AsyncIterable<T>): Promise<string> {
  let count = 0;
  for await (const _ of items) if (++count >= COUNT_CAP) return `${COUNT_CAP.toLocaleString()}+`;
  return count.toLocaleString();
}

async function counts(api: GrantdClient) {
  const [namespaces, grants, agents, keys] = await Promise.all([
    api.namespaces.list(),
    countOf(api.grants.iterate({ limit: 1000 })),
    countOf(api.agents.iterate({ limit: 1000 })),
    api.keys.list(),
  ]);
  return [
    { label: 'Namespaces', value: namespaces.namespaces.length.toLocaleString(), href: '#/namespaces' },
    { label: 'Grants', value: grants, href: '#/grants' },
    { label: 'Agents', value: agents, href: '#/agents' },
    { label: 'API keys', value: keys.keys.length.toLocaleString(), href: '#/keys' },
  ];
}

export function OverviewPage({ session }: PageProps) {
  const { data, problem, loading } = useLoad(() => counts(session.api));
  if (loading) return <Loading what="the tenant's counts" />;
  return (
    <>
      <LoadProblem problem={problem} />
      {data && (
        <ul class="cards">
          {data.map((card) => (
            <li key={card.label}>
              <a href={card.href}>
                <span class="count">{card.value}</span>
                <span>{card.label}</span>
              </a>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
