// The few parts of autocannon 9's programmatic API the benchmark uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
  }

  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    overallRate?: number;
    timeout?: number;
    method?: string;
    headers?: Record<string, string>;
    requests?: Request[];
  }

  interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    statusCodeStats: Record<string, { count: number }>;
  }

  interface Instance extends EventEmitter {
    stop(): void;
  }

  function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance;
  export default autocannon;
}
