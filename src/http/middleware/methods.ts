import { isAppRoute, type AppRouter } from '@ts-rest/core';
import type { NextFunction, Request, Response, Router } from 'express';
import { exactRouter } from '../options.ts';
import { sendProblem } from '../problem.ts';
import { shownPath } from '../shown-path.ts';

/**
 * Each path of `router` with the methods its routes take, sorted; a path taking GET takes HEAD too
 * (Express answers HEAD with the GET route).
 */
export function methodsByPath(router: AppRouter): Map<string, string[]> {
  const byPath = new Map<string, Set<string>>();
  const walk = (node: AppRouter): void => {
    for (const value of Object.values(node)) {
      if (!isAppRoute(value)) {
        walk(value);
        continue;
      }
      const methods = byPath.get(value.path) ?? new Set<string>();
      methods.add(value.method);
      if (value.method === 'GET') methods.add('HEAD');
      byPath.set(value.path, methods);
    }
  };
  walk(router);
  return new Map([...byPath].map(([path, methods]) => [path, [...methods].sort()]));
}

/**
 * A path of `router` asked with a method it does not take: 405 `method-not-allowed` with `Allow`
 * listing the ones it does (RFC 9110 15.5.6), rather than 404, before the key is looked at. Mounted
 * after every route, so only requests no route answered reach it; any other path goes on to 404.
 */
export function methodNotAllowed(router: AppRouter): Router {
  const paths = exactRouter();
  for (const [path, methods] of methodsByPath(router)) {
    const allow = methods.join(', ');
    paths.all(path, (req: Request, res: Response, next: NextFunction) => {
      // A route of the path that let the request through unanswered: no route, as before.
      if (methods.includes(req.method)) return next();
      res.setHeader('Allow', allow);
      sendProblem(res, 'method-not-allowed', `${req.method} is not allowed on ${shownPath(req.path)}; it takes ${allow}`);
    });
  }
  return paths;
}
