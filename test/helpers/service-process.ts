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

/**
 * `npm start` (embedded chain; PGlite, or a fresh PostgreSQL database when DATABASE_URL is set),
 * started by the first test that asks, shared by the process's tests, stopped after the run.
 */
export async function sharedService(): Promise<ServiceProcess> {
  started ??= (async () => {
    const database = process.env.DATABASE_URL ? await createTestDatabase({ migrate: false }) : undefined;
    const [port, chainPort] = [await freePort(), await freePort()];
    const stack = startStack({
      PORT: String(port),
      CHAIN_PORT: String(chainPort),
      DATABASE_URL: database?.url ?? "",
      DEPLOYMENTS_DIR: mkdtempSync(path.join(os.tmpdir(), "service-deployments-")),
    });
    // A start that fails leaves nothing behind: ready() has killed a late child, and the database goes.
    const line = await stack.ready().catch(async (error: unknown) => {
      await stack.stop();
      await database?.destroy();
      throw error;
    });
    return { service: { url: `http://127.0.0.1:${port}`, rpcUrl: line.match(/rpc=(\S+)/)![1]!, stack }, database };
  })();
  return (await started).service;
}

// A root hook: after every test of the run, the shared service (if one started) stops; a failed
// start has cleaned up after itself.
after(async () => {
  const ran = await started?.catch(() => undefined);
  if (!ran) return;
  await ran.service.stack.stop();
  await ran.database?.destroy();
});
