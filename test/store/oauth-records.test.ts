import { describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../../src/store/keys.ts';
import { createOAuthClient } from '../../src/store/oauth-clients.ts';
import { OAuthRecords } from '../../src/store/oauth-records.ts';
import { accessTokenDigest, findAccessToken } from '../../src/store/oauth-tokens.ts';
import { newTenant, useServices } from '../helpers.ts';

// A consent or a refresh reads the signing-in key, then writes its grant or tokens: a revocation
// landing between the two deletes nothing of what is written after it. Those records must never
// be honoured (docs/oauth.md, "Revoking the key that signed in").

const services = useServices();
const hooks = { bearerEnded: async () => undefined, sweepFailed: () => undefined };

async function signedInClient() {
  const tenant = await newTenant(services);
  const key = await createKey(services.db, tenant.id, 'signs in', ['grant:read']);
  const { row } = await createOAuthClient(
    services.db,
    { kind: 'api_key', keyId: key.id, tenantId: tenant.id },
    {
      name: 'app',
      type: 'public',
      redirectUris: ['https://app.example/callback'],
      scopes: ['grant:read'],
      agent: null,
    },
  );
  return { tenantId: tenant.id, keyId: key.id, clientId: row.clientId };
}

describe('records signed in for by an API key', () => {
  it('hold while the key is live, and not once it is revoked, even when written after the revocation', async () => {
    const { tenantId, keyId, clientId } = await signedInClient();
    const grants = new OAuthRecords(services.db, 'Grant', hooks);
    const tokens = new OAuthRecords(services.db, 'AccessToken', hooks);
    const payload = { accountId: keyId, clientId, grantId: 'grant-1', scope: 'grant:read' };
    await grants.upsert('grant-1', payload, 3600);
    await tokens.upsert('token-1', payload, 3600);
    expect(await grants.find('grant-1')).toMatchObject({ accountId: keyId });
    expect(await findAccessToken(services.db, accessTokenDigest('token-1'))).toMatchObject({ keyId: clientId, tenantId });

    expect(await revokeKey(services.db, tenantId, keyId)).toBe(true);
    // What an in-flight consent or refresh writes after the revocation.
    await grants.upsert('grant-2', { ...payload, grantId: 'grant-2' }, 3600);
    await tokens.upsert('token-2', { ...payload, grantId: 'grant-2' }, 3600);

    expect(await grants.find('grant-1')).toBeUndefined();
    expect(await grants.find('grant-2')).toBeUndefined();
    expect(await tokens.find('token-2')).toBeUndefined();
    expect(await findAccessToken(services.db, accessTokenDigest('token-1'))).toBeNull();
    expect(await findAccessToken(services.db, accessTokenDigest('token-2'))).toBeNull();
  });

  it('are not honoured for a key of another tenant', async () => {
    const mine = await signedInClient();
    const other = await signedInClient();
    const tokens = new OAuthRecords(services.db, 'AccessToken', hooks);
    await tokens.upsert('token-x', { accountId: other.keyId, clientId: mine.clientId, scope: 'grant:read' }, 3600);
    expect(await tokens.find('token-x')).toBeUndefined();
    expect(await findAccessToken(services.db, accessTokenDigest('token-x'))).toBeNull();
  });

  it('without a signing-in key (client credentials) are unaffected by key revocations', async () => {
    const { tenantId, keyId, clientId } = await signedInClient();
    const tokens = new OAuthRecords(services.db, 'ClientCredentials', hooks);
    await tokens.upsert('cc-1', { clientId, scope: 'grant:read' }, 3600);
    await revokeKey(services.db, tenantId, keyId);
    expect(await tokens.find('cc-1')).toMatchObject({ clientId });
    expect(await findAccessToken(services.db, accessTokenDigest('cc-1'))).toMatchObject({ keyId: clientId, tenantId });
  });
});
