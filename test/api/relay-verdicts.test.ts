// Relay verdicts are final (#43 item 5, D-103), on the embedded chain with automining paused as a
// block producer would hold a batch: a user's signed request copied out of the pending batch and
// run first by someone else is answered as run, with that transaction; a request the batch did
// not run is answered "not run" only once it can never run (its forwarder nonce cancelled).
import { expect } from "chai";
import type { Contract, TransactionResponse } from "ethers";
import type { TestApi } from "../helpers/api.js";
import type { TestChain } from "../helpers/chain.js";
import { type TestDatabase, usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitFor } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

describe(`relay verdicts are final (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let stack: MoneyStack | undefined;
  let chain: TestChain;
  let db: TestDatabase;
  let api: TestApi;
  let forwarder: Contract;

  before(async () => {
    stack = await startMoneyStack();
    ({ chain, db, api } = stack);
    forwarder = chain.contracts.forwarder;
  });
  afterEach(async () => {
    await chain?.setAutomine(true).catch(() => undefined);
  });
  after(async () => {
    await stack?.close();
  });

  /** A user whose wallet already granted the vault its standing allowance: a deposit is then one request in one batch. */
  async function depositor(prefix: string) {
    const user = await newTestUser(api, prefix, 50);
    expect((await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 5 })).status).to.equal(200);
    return user;
  }

  /** A ForwardRequest decoded from a batch's calldata, as a plain object (the decoded Result is read-only). */
  const plainRequest = (decoded: Record<string, unknown>) =>
    Object.fromEntries(["from", "to", "value", "gas", "deadline", "data", "signature"].map((k) => [k, decoded[k]]));

  /** The user's signed request in the batch waiting in the node's pool. */
  async function pendingRequestOf(wallet: string) {
    return waitFor(
      async () => {
        const block = (await chain.provider.send("eth_getBlockByNumber", ["pending", true])) as {
          transactions: { to: string; input: string }[];
        };
        for (const tx of block.transactions) {
          if (tx.to?.toLowerCase() !== (forwarder.target as string).toLowerCase()) continue;
          const parsed = forwarder.interface.parseTransaction({ data: tx.input });
          const requests = parsed?.name === "executeBatch" ? (parsed.args[0] as Record<string, unknown>[]) : [];
          const own = requests.find((request) => (request.from as string).toLowerCase() === wallet.toLowerCase());
          if (own) return plainRequest(own);
        }
        return undefined;
      },
      20_000,
      "the batch in the node's pool",
    );
  }

  const positionOf = async (token: string) => (await api.request("GET", "/v1/vault/position", { token })).body.data.usdcValue as string;

  it("answers a request copied out of the pending batch and run first as run, with the copier's transaction", async () => {
    const user = await depositor("copied");
    await chain.setAutomine(false);
    const answer = postWithKey(api, "/v1/vault/deposit", user.token, { amount: 10 });
    const request = await pendingRequestOf(user.wallet);
    // Someone who watches the pool runs the user's signed request first, paying a higher tip.
    const copier = await chain.signer(7);
    const copied = (await (forwarder.connect(copier) as Contract).getFunction("execute")(request, {
      gasLimit: 1_000_000n,
      maxFeePerGas: 200_000_000_000n,
      maxPriorityFeePerGas: 100_000_000_000n,
    })) as TransactionResponse;
    await chain.mine();
    await chain.setAutomine(true);

    // Before (#43): the batch found the nonce used, and the deposit that happened was answered 503 "not run".
    const response = await answer;
    expect(response.status, response.text).to.equal(200);
    expect(response.body.data.txHash).to.equal(copied.hash);
    expect((await chain.provider.getTransactionReceipt(copied.hash))?.status).to.equal(1);
    await waitFor(async () => ((await positionOf(user.token)) === "15.00" ? true : undefined), 20_000, "one deposit of 10, mirrored");
    const rows = await db.prisma.relayedRequest.findMany({
      where: { userId: user.id, purpose: "vault.deposit" },
      orderBy: { forwarderNonce: "asc" },
    });
    expect(rows.map((row) => row.status)).to.deep.equal(["executed", "executed"]);
  });

  it("answers a request its batch did not run as not run only once its nonce is cancelled: it can never run later", async () => {
    const user = await depositor("gap");
    const [last] = await db.prisma.relayedRequest.findMany({ where: { userId: user.id }, orderBy: { forwarderNonce: "desc" }, take: 1 });
    // A request recorded at the next nonce that the chain never ran (as a reorganisation leaves one until its batch is
    // broadcast again): the next request signs after it, so the forwarder skips it for its nonce, its deadline still valid.
    await db.prisma.relayedRequest.create({
      data: {
        ...last!,
        id: crypto.randomUUID(),
        idempotencyKey: "ghost",
        position: 99,
        forwarderNonce: last!.forwarderNonce + 1n,
        status: "reverted",
      },
    });
    const answer = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 10 });

    expectErrorEnvelope(answer, 503, "SERVICE_UNAVAILABLE");
    const skipped = await db.prisma.relayedRequest.findFirstOrThrow({
      where: { userId: user.id, purpose: "vault.deposit", status: "skipped" },
    });
    expect(skipped.forwarderNonce).to.equal(last!.forwarderNonce + 2n);
    // Before (#43): the verdict came with the nonce still free, and the signed request could run once the gap closed.
    const cancels = await db.prisma.relayedRequest.findMany({
      where: { userId: user.id, purpose: "relay.cancel" },
      orderBy: { forwarderNonce: "asc" },
    });
    expect(cancels.map((cancel) => [cancel.forwarderNonce, cancel.status])).to.deep.equal([
      [last!.forwarderNonce + 1n, "executed"],
      [last!.forwarderNonce + 2n, "executed"],
    ]);
    expect((await forwarder.nonces(user.wallet)) as bigint).to.equal(last!.forwarderNonce + 3n);
    const batch = await db.prisma.chainTransaction.findUniqueOrThrow({ where: { id: skipped.transactionId } });
    const signed = (forwarder.interface.parseTransaction({ data: batch.data })!.args[0] as Record<string, unknown>[])[skipped.position]!;
    const request = plainRequest(signed);
    expect((await forwarder.verify(request)) as boolean, "the signed request can never run").to.equal(false);
    expect(await positionOf(user.token)).to.equal("5.00");

    // The next write signs after the cancelled nonces and goes through.
    const next = await postWithKey(api, "/v1/vault/deposit", user.token, { amount: 10 });
    expect(next.status, next.text).to.equal(200);
    await waitFor(async () => ((await positionOf(user.token)) === "15.00" ? true : undefined), 20_000, "the next deposit, mirrored");
  });
});
