import type { z } from 'zod';
import type { ExplainResultSchema } from '../../contract/check.ts';

/**
 * POST /v1/check/explain's answer (docs/checks-and-listings.md#explaining-a-check), which
 * explainCheck (explain.ts) makes. Apart from explain.ts, which reads a GrantIndex, so that the
 * engine's interfaces (engine.ts) can name it without importing the index.
 */
export type Explanation = z.infer<typeof ExplainResultSchema>;
