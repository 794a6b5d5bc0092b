import type { AppRoute } from '@ts-rest/core';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { ZodType } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { contract, type RouteMetadata } from '../../../contract/index.ts';
import { DomainError, RetryLater } from '../../errors.ts';
import { schemaProblem, unexpectedProblem, valueAt } from '../middleware/errors.ts';
import { problemBody } from '../problem.ts';

/** A route's implementation as ts-rest calls it, with the arguments a tool call gives it. */
type RouteHandler = (args: {
  params: Record<string, never>;
  body: unknown;
  query: unknown;
  headers: Request['headers'];
  req: Request;
  res: Response;
}) => Promise<{ status: number; body: unknown }>;

/** The implementations of the API's routes (src/http/app.ts), with their write obligations applied. */
export interface ApiHandlers {
  check: unknown;
  checkBulk: unknown;
  explain: unknown;
  objects: { list: unknown };
  subjects: { list: unknown };
  grants: { list: unknown; batch: unknown };
  namespaces: { list: unknown };
}

/** An MCP tool: one route of the contract, called through that route's own implementation. */
export interface McpTool {
  definition: Tool;
  route: AppRoute;
  /** The route's body (a POST) or query (a GET): the tool's arguments. */
  input: ZodType;
  handler: RouteHandler;
}

/** docs/mcp.md: each tool and the /v1 route whose input it takes and whose answer it gives. */
const TOOL_ROUTES = (api: ApiHandlers) =>
  [
    ['check', contract.check, api.check],
    ['check_bulk', contract.checkBulk, api.checkBulk],
    ['explain', contract.explain, api.explain],
    ['list_objects', contract.objects.list, api.objects.list],
    ['list_subjects', contract.subjects.list, api.subjects.list],
    ['list_grants', contract.grants.list, api.grants.list],
    ['write_grants', contract.grants.batch, api.grants.batch],
    ['list_namespaces', contract.namespaces.list, api.namespaces.list],
  ] as const;

/** JSON Schema as MCP lists it: whole (no $ref into another tool's schema), the input as a caller writes it. */
const jsonSchemaOf = (schema: ZodType, io: 'input' | 'output') => {
  const { $schema: _, ...json } = zodToJsonSchema(schema, { $refStrategy: 'none', effectStrategy: 'input', pipeStrategy: io });
  return json as Tool['inputSchema'];
};

/** The tools, their definitions (schemas derived from the contract's) computed once. */
export function mcpTools(api: ApiHandlers): ReadonlyMap<string, McpTool> {
  return new Map(
    TOOL_ROUTES(api).map(([name, contractRoute, handler]) => {
      // A GET's query schema as the contract serves it: NoQuerySchema for one that defines none (contract/index.ts).
      const route: AppRoute = contractRoute;
      const input = (route.method === 'GET' ? route.query : route.body) as ZodType;
      const { revisions } = route.metadata as RouteMetadata;
      const definition: Tool = {
        name,
        title: route.summary,
        description: `${route.summary}, as ${route.method} ${route.path}: ${route.description}`,
        inputSchema: jsonSchemaOf(input, 'input'),
        outputSchema: jsonSchemaOf(route.responses[200] as ZodType, 'output'),
        annotations: { readOnlyHint: revisions !== 'writes', destructiveHint: revisions === 'writes', openWorldHint: false },
      };
      return [name, { definition, route, input, handler: handler as RouteHandler }] as const;
    }),
  );
}

/**
 * Calls `tool` as its route would be, on the request carrying the call (its principal, and the
 * response its write obligations answer a revision on): its JSON as structured content (and as
 * text), a problem as a tool error naming its type, title and detail.
 */
export async function callTool(tool: McpTool, args: unknown, req: Request, res: Response, logger: Logger): Promise<CallToolResult> {
  const where = tool.route.method === 'GET' ? 'query' : 'body';
  try {
    const parsed = tool.input.safeParse(args ?? {});
    if (!parsed.success) {
      throw schemaProblem(parsed.error.issues.map((issue) => ({ issue, where, value: valueAt(args, issue.path) })));
    }
    const input = parsed.data as unknown;
    const { body } = await tool.handler({
      params: {},
      body: where === 'body' ? input : undefined,
      query: where === 'query' ? input : {},
      headers: req.headers,
      req,
      res,
    });
    const json = body as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(json) }], structuredContent: json };
  } catch (error) {
    if (error instanceof RetryLater) logger.warn({ reqId: req.id, reason: error.reason }, 'request refused for now');
    const problem = error instanceof DomainError ? error : unexpectedProblem(error, logger, req.id);
    return { content: [{ type: 'text', text: JSON.stringify(problemBody(problem.type, problem.detail, problem.errors)) }], isError: true };
  }
}
