// `npm run bench:api`: autocannon against a bare node:http server (the machine's limit) and
// the API's public and authenticated reads, 100 connections each, in one run.

import { mkdtempSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "../api/app.js";
import { listen } from "../api/server.js";
import { connectRpc, startEmbeddedChain } from "../core/chain.js";
import { createClock } from "../core/clock.js";
import { loadConfig } from "../core/config.js";
import { openDatabase } from "../core/db.js";
import { createLogger } from "../core/logger.js";
import { applyMigrations } from "../core/migrations.js";

const CONNECTIONS = 100;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);

async function run(title: string, url: string, headers: Record<string, string> = {}, spreadIps = false) {
  // Anonymous calls are limited per client IP: the public read spreads them over many
  // (X-Forwarded-For from loopback is trusted) so it measures serving, not 429s.
  let n = 0;
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    headers,
    ...(spreadIps
      ? {
          requests: [
            {
              setupRequest: (request) => {
                n += 1;
                return {
                  ...request,
                  headers: { ...request.headers, "x-forwarded-for": `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` },
                };
              },
            },
          ],
        }
      : {}),
  });
  const line = {
    title,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
  console.log(`${title.padEnd(32)} ${String(line.rps).padStart(7)} req/s  p50 ${line.p50} ms  p99 ${line.p99} ms  non-2xx ${line.non2xx}`);
  return line;
}

const body = JSON.stringify({ success: true, data: { status: "ok" } });
const bare = http.createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(body));
await new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve));
const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;

// In-memory PGlite by default; BENCH_DATABASE_URL names a PostgreSQL database the benchmark
// may migrate and write a user into (never DATABASE_URL, which may hold real data).
const db = await openDatabase({ databaseUrl: process.env.BENCH_DATABASE_URL, pgliteDataDir: "memory://" });
await applyMigrations(db.migrationAdapter());
const chain = await startEmbeddedChain("127.0.0.1", 0);
const { provider, chainId } = await connectRpc(chain.rpcUrl);
const probe = http.createServer();
await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
const port = (probe.address() as AddressInfo).port;
await new Promise<void>((resolve) => probe.close(() => resolve()));
const config = loadConfig({ PORT: String(port), DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "bench-")), NODE_ENV: "test" });
const app = await createApp({ logger: createLogger("silent"), clock: createClock(), db, chain: { provider, chainId }, config });
const server = await listen(app, "127.0.0.1", port);

const post = async (urlPath: string, payload: unknown, method = "POST") =>
  (await (
    await fetch(`${server.url}${urlPath}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(payload) })
  ).json()) as { data: Record<string, string> };
const token = (await post("/dev/token", { sub: "bench", name: "Bench" })).data.accessToken!;
const me = (await (await fetch(`${server.url}/v1/users/me`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
  data: { id: string };
};
// Enterprise: the benchmark measures the API, not the 429s of the free plan.
await post(`/dev/users/${me.data.id}/plan`, { plan: "enterprise" }, "PUT");
const auth = { authorization: `Bearer ${token}` };

const baseline = await run("bare node:http", bareUrl);
await run("GET /v1/users/{userId} (public)", `${server.url}/v1/users/${me.data.id}`, {}, true);
const reads = [
  await run("GET /v1/users/me", `${server.url}/v1/users/me`, auth),
  await run("GET /v1/users/{userId}/xp", `${server.url}/v1/users/${me.data.id}/xp`, auth),
  await run("GET /v1/trust-score/{userId}", `${server.url}/v1/trust-score/${me.data.id}`, auth),
];
const worst = reads.reduce((a, b) => (a.rps < b.rps ? a : b));
const worstP99 = Math.max(...reads.map((r) => r.p99));
await server.close();
bare.close();
provider.destroy();
await chain.close();
await db.close();
// The last line is the summary a CI step reads: worst authenticated read / bare, worst p99.
console.log(`ratio: ${(worst.rps / baseline.rps).toFixed(2)} p99_ms: ${worstP99}`);
