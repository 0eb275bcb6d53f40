import http from "node:http";
import type { AddressInfo } from "node:net";
import type express from "express";
import { type AppDeps, createApp } from "./app.js";
import { connectRedis } from "./http/rate-limit.js";

export class HttpStartError extends Error {
  override name = "HttpStartError";
}

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

export function listen(app: express.Express, host: string, port: number): Promise<RunningServer> {
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new HttpStartError(
          error.code === "EADDRINUSE"
            ? `api: PORT ${port} is already in use; set PORT to a free port`
            : `api: cannot listen on ${host}:${port} (${error.code ?? error.message})`,
        ),
      );
    });
    server.listen(port, host, () => {
      const { port: bound } = server.address() as AddressInfo;
      resolve({
        url: `http://${host}:${bound}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
          }),
      });
    });
  });
}

/**
 * The API of a process (`npm start`, `npm run api`): the rate-limit counters in Redis when
 * REDIS_URL is set, the app, and its listening server, each registered with `onStop`.
 */
export async function serveApi(
  deps: Omit<AppDeps, "redis" | "config"> & { config: AppDeps["config"] & { redisUrl?: string; http: { host: string; port: number } } },
  onStop: (stopper: () => void | Promise<void>) => void,
) {
  const redis = deps.config.redisUrl ? connectRedis(deps.config.redisUrl, deps.logger) : undefined;
  // quit() refuses while the connection is still being made (no offline queue): then drop it.
  if (redis)
    onStop(() =>
      redis.quit().then(
        () => {},
        () => redis.disconnect(),
      ),
    );
  const app = await createApp({ ...deps, redis });
  const server = await listen(app, deps.config.http.host, deps.config.http.port);
  onStop(() => server.close());
  return { app, server };
}
