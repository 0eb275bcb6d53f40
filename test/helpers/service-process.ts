import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { freePort, type StackProcess, startStack } from "./stack.js";

/** The service as `npm start` runs it: what the client libraries' tests talk to, over HTTP only. */
export interface ServiceProcess {
  /** The API's address, e.g. http://127.0.0.1:41234 */
  url: string;
  rpcUrl: string;
  stack: StackProcess;
}

let started: Promise<{ service: ServiceProcess; database: TestDatabase | undefined }> | undefined;
/** What the root hook stops, whether or not the start got as far as ready. */
let cleanup: { stack?: StackProcess; database?: TestDatabase } = {};

/**
 * `npm start` (embedded chain; PGlite, or a fresh PostgreSQL database when DATABASE_URL is set),
 * started by the first test that asks, shared by the process's tests, stopped after the run.
 */
export async function sharedService(): Promise<ServiceProcess> {
  started ??= (async () => {
    const database = process.env.DATABASE_URL ? await createTestDatabase({ migrate: false }) : undefined;
    cleanup.database = database;
    const [port, chainPort] = [await freePort(), await freePort()];
    const stack = startStack({
      PORT: String(port),
      CHAIN_PORT: String(chainPort),
      DATABASE_URL: database?.url ?? "",
      DEPLOYMENTS_DIR: mkdtempSync(path.join(os.tmpdir(), "service-deployments-")),
    });
    cleanup.stack = stack;
    const line = await stack.ready();
    return { service: { url: `http://127.0.0.1:${port}`, rpcUrl: line.match(/rpc=(\S+)/)![1]!, stack }, database };
  })();
  return (await started).service;
}

// A root hook: after every test of the run, the shared service stops, also when its start failed
// (a child left running would hold the test process open).
after(async () => {
  const { stack, database } = cleanup;
  cleanup = {};
  await stack?.stop();
  await database?.destroy();
});
