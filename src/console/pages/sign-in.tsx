import { useState } from 'preact/hooks';
import type { Shown } from '../problems.ts';
import { CONSOLE_SCOPE, redirectUri, rememberedClientId, startSignIn } from '../session.ts';
import { Field, FormProblem, useSubmit } from '../ui.tsx';

/** The client id of an OAuth client, as grantd makes them: a mistyped length is told here, not on an error page. */
const CLIENT_ID = /^oc_[A-Za-z0-9]{20}$/;

/**
 * Sign-in: the tenant's console client (a public OAuth client whose redirect URI is this console's
 * callback) sends the browser to the consent page, where the admin signs in with an API key.
 */
export function SignInPage({ message }: { message: Shown | undefined }) {
  const [clientId, setClientId] = useState(rememberedClientId);
  const { busy, problems, setProblems } = useSubmit(['client_id']);
  const submit = (e: Event) => {
    e.preventDefault();
    const id = clientId.trim();
    if (!CLIENT_ID.test(id)) {
      return setProblems({ fields: { client_id: { title: 'Invalid client id', detail: 'a client id is oc_ followed by 20 letters and digits' } } });
    }
    void startSignIn(id);
  };
  const setup = JSON.stringify({ name: 'console', type: 'public', redirect_uris: [redirectUri()], scopes: [CONSOLE_SCOPE] });
  return (
    <main id="main" class="sign-in">
      <h1>grantd console</h1>
      {message && (
        <p class="notice" role="status">
          <strong>{message.title}</strong>: {message.detail}
        </p>
      )}
      <form onSubmit={(e) => void submit(e)} noValidate>
        <Field
          label="Console client id"
          name="client_id"
          value={clientId}
          onValue={setClientId}
          problems={problems}
          hint="The public OAuth client of your tenant whose redirect URI is this console. You sign in on the next page with an admin API key."
          required
        />
        <FormProblem problems={problems} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
      <details>
        <summary>No console client yet?</summary>
        <p>
          Tenant <code>default</code> has one from grantd's first start: the line grantd prints when it is ready names this console's address with it.
          An admin of any other tenant creates one once, with an admin API key in <code>GRANTD_KEY</code>:
        </p>
        <pre>{`grantd oauth clients create console --type public --scopes ${CONSOLE_SCOPE} --redirect-uri ${redirectUri()}`}</pre>
        <p>or with curl:</p>
        <pre>
          {`curl -X POST ${new URL('../v1/oauth/clients', redirectUri()).href} \\\n  -H "Authorization: Bearer $ADMIN_KEY" -H 'Content-Type: application/json' \\\n  -d '${setup}'`}
        </pre>
        <p>Its client_id goes above. It holds no secret; the consent page asks for an API key with the admin scope at each sign-in.</p>
      </details>
    </main>
  );
}
