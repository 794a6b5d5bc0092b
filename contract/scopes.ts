import { z } from 'zod';

/** Capabilities an API key can carry; `admin` implies every other one. */
export const KEY_SCOPES = ['check:read', 'grant:read', 'grant:write', 'admin'] as const;
export const KeyScopeSchema = z.enum(KEY_SCOPES);
export type KeyScope = z.infer<typeof KeyScopeSchema>;
