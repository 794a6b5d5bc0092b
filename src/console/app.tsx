// The console's frame: sign-in, navigation between pages (#/<page>), sign-out.
import { useEffect, useState } from 'preact/hooks';
import { AgentsPage } from './pages/agents.tsx';
import { ChangesPage } from './pages/changes.tsx';
import { CheckPage } from './pages/check.tsx';
import { ClientsPage } from './pages/clients.tsx';
import { GrantsPage } from './pages/grants.tsx';
import { KeysPage } from './pages/keys.tsx';
import { NamespacesPage } from './pages/namespaces.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { finishSignIn, isCallback, SignInError, type PageProps, type Session } from './session.ts';
import { Loading } from './ui.tsx';
import type { Shown } from './problems.ts';
import { problemsOf } from './problems.ts';

const PAGES = [
  { path: '', label: 'Overview', Page: OverviewPage },
  { path: 'namespaces', label: 'Namespaces', Page: NamespacesPage },
  { path: 'grants', label: 'Grants', Page: GrantsPage },
  { path: 'check', label: 'Check', Page: CheckPage },
  { path: 'agents', label: 'Agents', Page: AgentsPage },
  { path: 'keys', label: 'API keys', Page: KeysPage },
  { path: 'clients', label: 'OAuth clients', Page: ClientsPage },
  { path: 'changes', label: 'Changes', Page: ChangesPage },
] as const;

const currentPath = (): string => window.location.hash.replace(/^#\/?/, '');

function useHashPath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const onChange = () => setPath(currentPath());
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return path;
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [finishing, setFinishing] = useState(isCallback);
  const [message, setMessage] = useState<Shown | undefined>();

  useEffect(() => {
    if (!finishing) return;
    finishSignIn((reason) => {
      setSession(null);
      setMessage({ title: 'Signed out', detail: reason });
    })
      .then(
        (signedIn) => setSession(signedIn),
        (error: unknown) => setMessage(error instanceof SignInError ? { title: error.title, detail: error.detail } : problemsOf(error, []).form),
      )
      .finally(() => setFinishing(false));
  }, []);

  if (finishing) return <Loading what="your session" />;
  if (!session) return <SignInPage message={message} />;
  return <Shell session={session} />;
}

function Shell({ session }: PageProps) {
  const path = useHashPath();
  const page = PAGES.find((p) => p.path === path) ?? PAGES[0];
  useEffect(() => {
    // The tenant in the tab's title too: an admin of several tenants tells their tabs apart.
    document.title = `${page.label} · ${session.tenant.name} · grantd console`;
    document.getElementById('main')?.focus();
  }, [page.path]);
  return (
    <div class="layout">
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">grantd console</span>
        <span class="signed-in">
          <span>
            Tenant <strong class="tenant">{session.tenant.name}</strong>
          </span>
          <button type="button" onClick={() => void session.signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <nav aria-label="Pages">
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              <a href={`#/${p.path}`} aria-current={p === page ? 'page' : undefined}>
                {p.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <h1>{page.label}</h1>
        <page.Page session={session} />
      </main>
    </div>
  );
}
