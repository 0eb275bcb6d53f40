import http from "node:http";
import type { AddressInfo } from "node:net";
import type express from "express";

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
