import { describe, expectTypeOf, it } from 'vitest';
import type {
  Agent,
  AgentDeletion,
  AgentInput,
  CheckBulkInput,
  CheckBulkResult,
  CheckInput,
  CheckResult,
  CreatedKey,
  Grant,
  GrantBatchInput,
  GrantBatchResult,
  GrantdClient,
  GrantInput,
  GrantPage,
  GrantsQuery,
  KeyInput,
  KeyList,
  Namespace,
  NamespaceInput,
  ObjectPage,
  ObjectsQuery,
  Written,
} from '../../src/client/index.ts';

// Compile-time checks (run by `tsc -p tsconfig.json`): the client's types are the contract's.
interface Triple {
  subject: string;
  relation: string;
  object: string;
}
type KeyScope = 'check:read' | 'grant:read' | 'grant:write' | 'admin';

describe('client types derived from the contract', () => {
  it('has the request and response shapes of docs/api.md', () => {
    expectTypeOf<CheckInput>().toEqualTypeOf<Triple>();
    expectTypeOf<CheckResult>().toEqualTypeOf<{ allowed: boolean }>();
    expectTypeOf<CheckBulkInput>().toEqualTypeOf<{ checks: Triple[] }>();
    expectTypeOf<CheckBulkResult['results'][number]['allowed']>().toEqualTypeOf<boolean>();
    expectTypeOf<Grant>().toEqualTypeOf<{
      subject: string;
      relation: string;
      object: string;
      created_at: string;
      not_before: string | null;
      expires_at: string | null;
    }>();
    expectTypeOf<GrantPage>().toEqualTypeOf<{ grants: Grant[]; next_cursor: string | null }>();
    expectTypeOf<GrantsQuery>().toEqualTypeOf<{
      subject?: string | undefined;
      relation?: string | undefined;
      object?: string | undefined;
      namespace?: string | undefined;
      active?: boolean | undefined;
      cursor?: string | undefined;
      limit?: number | undefined;
    }>();
    expectTypeOf<GrantInput>().toEqualTypeOf<
      Triple & { not_before?: string | Date | null | undefined; expires_at?: string | Date | null | undefined }
    >();
    expectTypeOf<GrantBatchInput['writes']>().toEqualTypeOf<GrantInput[] | undefined>();
    expectTypeOf<GrantBatchInput['deletes']>().toEqualTypeOf<Triple[] | undefined>();
    expectTypeOf<GrantBatchResult>().toEqualTypeOf<{ written: number; deleted: number }>();
    expectTypeOf<ObjectsQuery>().toEqualTypeOf<{
      namespace: string;
      subject: string;
      relation: string;
      cursor?: string | undefined;
      limit?: number | undefined;
    }>();
    expectTypeOf<ObjectPage>().toEqualTypeOf<{ namespace: string; objects: string[]; next_cursor: string | null }>();
    expectTypeOf<NamespaceInput['name']>().toEqualTypeOf<string>();
    expectTypeOf<Namespace['created_at']>().toEqualTypeOf<string>();
    expectTypeOf<AgentInput>().toEqualTypeOf<{
      external_id: string;
      display_name?: string | undefined;
      owner?: string | undefined;
      scope: string[];
    }>();
    expectTypeOf<Agent>().toEqualTypeOf<{
      external_id: string;
      subject: string;
      display_name: string | null;
      owner: string | null;
      scope: string[];
      created_at: string;
    }>();
    expectTypeOf<AgentDeletion>().toEqualTypeOf<{ external_id: string; grants_removed: number; clients_removed: number }>();
    expectTypeOf<KeyInput>().toEqualTypeOf<{ label?: string | undefined; scopes?: KeyScope[] | undefined }>();
    expectTypeOf<CreatedKey>().toEqualTypeOf<{ id: string; prefix: string; secret: string; label: string; scopes: KeyScope[]; created_at: string }>();
    expectTypeOf<KeyList['keys'][number]>().toEqualTypeOf<{
      id: string;
      prefix: string;
      label: string;
      scopes: KeyScope[];
      created_at: string;
      last_used_at: string | null;
    }>();
  });

  it('returns bodies directly, with the revision of a write (alone for the 204 endpoints), and iterates items', () => {
    expectTypeOf<ReturnType<GrantdClient['grants']['revoke']>>().toEqualTypeOf<Promise<Written>>();
    expectTypeOf<ReturnType<GrantdClient['keys']['revoke']>>().toEqualTypeOf<Promise<Written>>();
    expectTypeOf<Written['revision']>().toEqualTypeOf<string | null>();
    expectTypeOf<Awaited<ReturnType<GrantdClient['grants']['create']>>>().toEqualTypeOf<Grant & { revision: string | null }>();
    expectTypeOf<ReturnType<GrantdClient['check']>>().toEqualTypeOf<Promise<{ allowed: boolean }>>();
    expectTypeOf<ReturnType<GrantdClient['objects']['iterate']>>().toEqualTypeOf<AsyncGenerator<string, void, undefined>>();
    expectTypeOf<ReturnType<GrantdClient['grants']['iterate']>>().toEqualTypeOf<AsyncGenerator<Grant, void, undefined>>();
    expectTypeOf<Parameters<GrantdClient['namespaces']['list']>>().toEqualTypeOf<
      [options?: { timeoutMs?: number; consistency?: { atLeast: string } | 'full' }]
    >();
    expectTypeOf<Parameters<GrantdClient['keys']['list']>>().toEqualTypeOf<[options?: { timeoutMs?: number }]>();
  });
});
