import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { ensureChainIdentity } from "../../core/chain-identity.js";
import { createLogger } from "../../core/logger.js";
import { CHAIN_DERIVED_TABLES } from "../../domain/modules.js";
import type { Indexer } from "../../indexer/indexer.js";
import { startTestApi, type TestApi } from "./api.js";
import { startTestChain, type TestChain } from "./chain.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { testIndexer } from "./mirror.js";

/** A chain, a migrated database, the indexer mirroring the chain into it, and the API on both. */
export interface MoneyStack {
  chain: TestChain;
  db: TestDatabase;
  indexer: Indexer;
  api: TestApi;
  /** Stops all four, the API first. */
  close(): Promise<void>;
}

/** Starts the stack the money tests run on (TEST_LOG_LEVEL shows the API's log); the indexer waits `confirmations` blocks (default 0). */
export async function startMoneyStack(options: { confirmations?: number } = {}): Promise<MoneyStack> {
  const chain = await startTestChain();
  const db = await createTestDatabase();
  await ensureChainIdentity(db, chain.deployment, { embedded: true, logger: createLogger("silent"), chainTables: CHAIN_DERIVED_TABLES });
  const indexer = testIndexer(db, chain, { confirmations: options.confirmations ?? 0 });
  indexer.start();
  const api = await startTestApi({ chain, db, logger: createLogger(process.env.TEST_LOG_LEVEL ?? "silent") });
  return {
    chain,
    db,
    indexer,
    api,
    async close() {
      await api.close();
      await indexer.stop();
      await db.destroy();
      await chain.close();
    },
  };
}

/** A user signed in with a development token (`subject` prefixed by `prefix`), given `funds` USDC by the faucet. */
export async function newTestUser(api: TestApi, prefix: string, funds = 0, expiresIn = 86_400 * 30) {
  const subject = `${prefix}-${randomUUID()}`;
  const token = await api.token(subject, { expiresIn });
  const me = (await api.request("GET", "/v1/users/me", { token })).body.data;
  if (funds > 0) {
    const faucet = await api.request("POST", "/dev/faucet", {
      token,
      body: { amount: funds },
      headers: { "idempotency-key": randomUUID() },
    });
    expect(faucet.status, faucet.text).to.equal(200);
  }
  return { subject, token, id: me.id as string, wallet: me.walletAddress as string };
}

/**
 * Moves the sandbox's service and chain clocks on by `seconds`, then gives `users` fresh tokens
 * (theirs would have expired on the service's clock).
 */
export async function advanceSandbox(api: TestApi, seconds: number, users: { subject: string; token: string }[]) {
  const moved = await api.request("POST", "/dev/time/advance", { body: { seconds } });
  expect(moved.status, moved.text).to.equal(200);
  for (const user of users) user.token = await api.token(user.subject, { expiresIn: 86_400 * 30 });
}

/** A POST with an Idempotency-Key (a new one unless `key` is given). */
export const postWithKey = (api: TestApi, path: string, token: string, body: unknown, key: string = randomUUID()) =>
  api.request("POST", path, { token, body, headers: { "idempotency-key": key } });
