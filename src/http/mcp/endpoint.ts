import type { AppRoute } from '@ts-rest/core';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { KeyScope, RouteMetadata } from '../../../contract/index.ts';
import { hasScope } from '../../auth/scopes.ts';
import { packageVersion } from '../../package-root.ts';
import { principalOf, type AppDeps } from '../context.ts';
import type { ScopedByHandler } from '../middleware/authenticate.ts';
import { callTool, mcpTools, type ApiHandlers, type McpTool } from './tools.ts';

export const MCP_PATH = '/mcp';

/** JSON-RPC's implementation-defined server error, which the SDK's transport answers a method it does not serve with. */
const NOT_SERVED = -32000;

/**
 * What the middleware shared with /v1 reads of the route (src/http/middleware/authenticate.ts,
 * body.ts): a POST with a JSON body, admitted with any valid key, each tool's scope checked once the
 * call is read; no Grantd-Consistency.
 */
const MCP_ROUTE = {
  method: 'POST',
  path: MCP_PATH,
  body: null,
  responses: {},
  metadata: { scope: null } satisfies ScopedByHandler,
} as const satisfies AppRoute;

interface Admission {
  /** What /v1 runs before a route: authentication, the per-key rate limit, the body, authentication again. */
  middleware: RequestHandler[];
  /** The 403 /v1 answers a key or token lacking a route's scope. */
  refuseScope: (req: Request, res: Response, scope: KeyScope) => void;
}

/**
 * POST /mcp, the Model Context Protocol over Streamable HTTP, stateless (docs/mcp.md): each request
 * gets its own server and transport, answered with JSON (no stream). A request is admitted as a /v1
 * request is; a tool call whose scope its key or token lacks is refused as /v1 refuses it (403),
 * before the call, rather than answered as a tool error, so that an OAuth client can ask for the scope.
 * Any other method is 405: there is no stream to open, nor session to end.
 */
export function mcpEndpoint(deps: AppDeps, api: ApiHandlers, { middleware, refuseScope }: Admission): Router {
  const tools = mcpTools(api);
  const listed = { tools: [...tools.values()].map((tool) => tool.definition) };
  const version = packageVersion();
  // One for every request's server: a Server makes an Ajv instance of its own unless given one, a
  // millisecond or more of the event loop and its garbage per request (issue 40), for elicitation,
  // which this server never asks.
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const calledTool = (message: unknown): McpTool | undefined => {
    const { method, params } = (message ?? {}) as { method?: unknown; params?: { name?: unknown } };
    return method === 'tools/call' && typeof params?.name === 'string' ? tools.get(params.name) : undefined;
  };

  const serve = async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    // One message a request: a batch would carry many calls past the per-key rate limit as one request.
    if (Array.isArray(req.body)) return rpcError(res, 400, ErrorCode.InvalidRequest, 'send one JSON-RPC message per request, not a batch');
    const tool = calledTool(req.body);
    const scope = tool && (tool.route.metadata as RouteMetadata).scope;
    if (scope && !hasScope(principalOf(req).scopes, scope)) return refuseScope(req, res, scope);

    const server = new Server({ name: 'grantd', version }, { capabilities: { tools: {} }, jsonSchemaValidator });
    server.setRequestHandler(ListToolsRequestSchema, () => listed);
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      const called = tools.get(request.params.name);
      if (!called) throw new McpError(ErrorCode.InvalidParams, `no tool ${request.params.name}; tools/list names them`);
      return callTool(called, request.params.arguments, req, res, deps.logger);
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (error) {
      next(error);
    }
  };

  const router = express.Router({ caseSensitive: true, strict: true });
  router.post(
    MCP_PATH,
    (req, _res, next) => {
      (req as Request & { tsRestRoute: AppRoute }).tsRestRoute = MCP_ROUTE;
      next();
    },
    ...middleware,
    serve,
  );
  router.all(MCP_PATH, (_req, res) => {
    res.setHeader('Allow', 'POST');
    rpcError(res, 405, NOT_SERVED, 'POST /mcp only: this server is stateless and opens no stream');
  });
  return router;
}

/** A refusal as the Streamable HTTP transport answers one: a JSON-RPC error with no id. */
function rpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}
