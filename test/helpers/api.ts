import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Redis } from "ioredis";
import { createApp } from "../../api/app.js";
import { listen } from "../../api/server.js";
import { connectRpc, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { type Clock, createClock } from "../../core/clock.js";
import { HARDHAT_DEV_DEPLOYER_KEY, loadConfig } from "../../core/config.js";
import type { Deployment } from "../../core/deployments.js";
import { createLogger, type Logger } from "../../core/logger.js";
import { type Services, servicesFromConfig } from "../../domain/services.js";
import type { Lookup } from "../../domain/webhooks/egress.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { freePort } from "./stack.js";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
export type Json = any;

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Json;
  text: string;
}

export interface TestApi {
  url: string;
  clock: Clock;
  db: TestDatabase;
  /** The chain the API talks to (its own embedded one, or the one passed in). */
  chain: Pick<EmbeddedChain, "rpcUrl">;
  dataDir: string;
  /** The app's domain services (XP awards, Trust Score recomputation) for tests that drive them directly. */
  services: Services;
  /** A development token for `sub` (fetched from POST /dev/token). */
  token(sub: string, claims?: { email?: string; name?: string; expiresIn?: number }): Promise<string>;
  request(
    method: string,
    path: string,
    options?: { token?: string; apiKey?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<ApiResponse>;
  close(): Promise<void>;
}

/**
 * Every setting NODE_ENV=production requires, pointing nowhere: the test API of a production
 * process (the database and chain it uses are the test's own).
 */
export const PRODUCTION_ENV: Record<string, string> = {
  NODE_ENV: "production",
  CHAIN_RPC_URL: "http://127.0.0.1:9",
  DEPLOYER_PRIVATE_KEY: HARDHAT_DEV_DEPLOYER_KEY,
  DATABASE_URL: "postgresql://unused@127.0.0.1/unused",
  AUTH_JWKS_URL: "http://127.0.0.1:9/jwks",
  AUTH_ISSUER: "https://idp.example/",
  AUTH_AUDIENCE: "api",
  MANAGED_WALLET_MNEMONIC: "test test test test test test test test test test test junk",
  SMTP_URL: "smtp://127.0.0.1:9",
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
  TREASURY_ADDRESS: "0x000000000000000000000000000000000000fee5",
  OIDC_CLIENT_ID: "trustmint-checkout",
};

/**
 * The API over real HTTP on an ephemeral port, with a migrated test database and an embedded
 * chain; or on a chain and database the test already runs (an indexer beside it), which the
 * test closes itself.
 */
export async function startTestApi(
  options: {
    env?: Record<string, string>;
    redis?: Redis;
    /** A chain the test runs; with its deployment, the API sends transactions to it (faucet, ...). */
    chain?: { rpcUrl: string; deployment?: Deployment };
    db?: TestDatabase;
    /** Where the app logs (default: nowhere); tests that assert on log lines pass a capturing one. */
    logger?: Logger;
    /** Resolves webhook hosts (a test's own DNS); default the system's. */
    webhookLookup?: Lookup;
  } = {},
): Promise<TestApi> {
  const db = options.db ?? (await createTestDatabase());
  const ownChain = options.chain ? undefined : await startEmbeddedChain("127.0.0.1", 0);
  const chain = options.chain ?? ownChain!;
  const { provider, chainId } = await connectRpc(chain.rpcUrl);
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "api-test-"));
  const config = loadConfig({ PORT: String(port), DATA_DIR: dataDir, NODE_ENV: "test", ...options.env });
  const clock = createClock();
  const deployment = options.chain?.deployment;
  const services = await servicesFromConfig(config, {
    db,
    clock,
    logger: options.logger,
    processKind: "api",
    cacheReads: true,
    chain: deployment && { provider, chainId, deployment },
    webhookLookup: options.webhookLookup,
  });
  const app = await createApp({
    logger: options.logger ?? createLogger("silent"),
    clock,
    db,
    chain: { provider, chainId },
    config,
    services,
    redis: options.redis,
  });
  const server = await listen(app, "127.0.0.1", port);

  const request: TestApi["request"] = async (method, urlPath, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.apiKey) headers["x-api-key"] = opts.apiKey;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    const response = await fetch(`${server.url}${urlPath}`, { method, headers, body });
    const text = await response.text();
    let parsed: Json;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  };

  return {
    url: server.url,
    clock,
    db,
    chain,
    dataDir,
    services,
    request,
    token: async (sub, claims = {}) => {
      const response = await request("POST", "/dev/token", { body: { sub, ...claims } });
      if (response.status !== 200) throw new Error(`POST /dev/token answered ${response.status}: ${response.text}`);
      return response.body.data.accessToken as string;
    },
    close: async () => {
      services.notificationFeed.stop();
      await server.close();
      await services.stop();
      provider.destroy();
      if (ownChain) await ownChain.close();
      if (!options.db) await db.destroy();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
