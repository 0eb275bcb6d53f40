// `npm run bench:api`: autocannon against a bare node:http server (the machine's limit), a one-route
// Express 5 app (the framework's floor) and the API's public and authenticated reads, 100 connections each, in one run.

import { mkdtempSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import express from "express";
import { createApp } from "../api/app.js";
import { listen } from "../api/server.js";
import { connectRpc, startEmbeddedChain } from "../core/chain.js";
import { createClock } from "../core/clock.js";
import { loadConfig } from "../core/config.js";
import { openDatabase } from "../core/db.js";
import { createLogger } from "../core/logger.js";
import { applyMigrations } from "../core/migrations.js";
import { servicesFromConfig } from "../domain/services.js";
import { freePort } from "./bench/free-port.js";

const CONNECTIONS = 100;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SPREAD_CLIENT_IPS = fileURLToPath(new URL("./bench/spread-client-ip.cjs", import.meta.url));

async function run(url: string, headers: Record<string, string> = {}, spreadIps = false) {
  // The load generator runs in a worker thread, so the servers (bare and API alike) keep this
  // thread to themselves, as they would in production.
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    workers: 1,
    headers,
    ...(spreadIps ? { requests: [{ setupRequest: SPREAD_CLIENT_IPS }] } : {}),
  });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx };
}

type Sample = Awaited<ReturnType<typeof run>>;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const body = JSON.stringify({ success: true, data: { status: "ok" } });
async function serve(handler: http.RequestListener) {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}
const bare = await serve((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(body));
// The framework's own cost: Express 5 answering the same body from one route, nothing else.
const minimalExpress = express();
minimalExpress.set("etag", false);
minimalExpress.get("/", (_req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(body);
});
const floor = await serve(minimalExpress as unknown as http.RequestListener);

// In-memory PGlite by default; BENCH_DATABASE_URL names a PostgreSQL database the benchmark
// may migrate and write a user into (never DATABASE_URL, which may hold real data).
const db = await openDatabase({ databaseUrl: process.env.BENCH_DATABASE_URL, pgliteDataDir: "memory://" });
await applyMigrations(db.migrationAdapter());
const chain = await startEmbeddedChain("127.0.0.1", 0);
const { provider, chainId } = await connectRpc(chain.rpcUrl);
const port = await freePort();
const config = loadConfig({ PORT: String(port), DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "bench-")), NODE_ENV: "test" });
const clock = createClock();
const services = await servicesFromConfig(config, { db, clock, processKind: "api", cacheReads: true });
const app = await createApp({ logger: createLogger("silent"), clock, db, chain: { provider, chainId }, config, services });
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

const targets: { title: string; url: string; headers?: Record<string, string>; spreadIps?: boolean; authenticated?: boolean }[] = [
  { title: "bare node:http", url: bare.url },
  { title: "Express 5, one route (floor)", url: floor.url },
  { title: "GET /v1/users/{userId} (public)", url: `${server.url}/v1/users/${me.data.id}`, spreadIps: true },
  { title: "GET /v1/users/me", url: `${server.url}/v1/users/me`, headers: auth, authenticated: true },
  { title: "GET /v1/users/{userId}/xp", url: `${server.url}/v1/users/${me.data.id}/xp`, headers: auth, authenticated: true },
  { title: "GET /v1/trust-score/{userId}", url: `${server.url}/v1/trust-score/${me.data.id}`, headers: auth, authenticated: true },
];
// Rounds interleave the targets, and each figure is the median over the rounds, so a burst of
// load from elsewhere on the machine moves one sample, not the ratio.
const samples = new Map<string, Sample[]>(targets.map((t) => [t.title, []]));
for (let round = 1; round <= ROUNDS; round += 1) {
  for (const target of targets) samples.get(target.title)!.push(await run(target.url, target.headers, target.spreadIps));
  console.error(`round ${round}/${ROUNDS} done`);
}
const summary = targets.map((target) => {
  const runs = samples.get(target.title)!;
  return {
    ...target,
    rps: Math.round(median(runs.map((r) => r.rps))),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
  };
});
const baseline = summary[0]!;
const express5 = summary[1]!;
console.log(`${CONNECTIONS} connections, ${DURATION_S} s per run, median of ${ROUNDS} rounds; load generator in its own thread`);
for (const line of summary) {
  console.log(
    `${line.title.padEnd(32)} ${String(line.rps).padStart(7)} req/s  p50 ${line.p50} ms  p99 ${line.p99} ms  non-2xx ${line.non2xx}` +
      `  x bare ${(line.rps / baseline.rps).toFixed(2)}  x Express floor ${(line.rps / express5.rps).toFixed(2)}`,
  );
}
const reads = summary.filter((line) => line.authenticated);
const worst = reads.reduce((a, b) => (a.rps < b.rps ? a : b));
const worstP99 = Math.max(...reads.map((r) => r.p99));
await server.close();
bare.server.close();
floor.server.close();
provider.destroy();
await chain.close();
await db.close();
// The last line is the summary a CI step reads: worst authenticated read / bare, worst p99.
console.log(`ratio: ${(worst.rps / baseline.rps).toFixed(2)} p99_ms: ${worstP99}`);
