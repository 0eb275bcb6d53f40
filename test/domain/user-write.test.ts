// userWrite (domain/transactions/user-write.ts), the one write of a user's money, on the real
// money path (chain, relay, indexer, database) without a route in front of it: it answers once
// the mirror has the write's block, the event id it derives is the one the indexer recorded, a
// wallet short of USDC is INSUFFICIENT_BALANCE on the field the domain names (a domain's own
// mapping first), and a retry under the operation's key sends nothing new.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { MIRRORED_CHAIN_ID } from "../../core/chain-identity.js";
import { AppError } from "../../domain/errors.js";
import { createUserWrite, type UserWrite } from "../../domain/transactions/user-write.js";
import { usdc } from "../helpers/chain.js";
import { usingPostgres } from "../helpers/database.js";
import { type MoneyStack, newTestUser, startMoneyStack } from "../helpers/money-stack.js";

describe(`userWrite: a user's money write (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let stack: MoneyStack;
  let userWrite: UserWrite;
  let vaultAddress: string;

  before(async () => {
    stack = await startMoneyStack();
    const { services } = stack.api;
    userWrite = createUserWrite({ chainId: stack.chain.deployment.chainId, transactions: services.relay!, mirror: services.mirror! });
    vaultAddress = await stack.chain.contracts.vault.getAddress();
  });
  after(async () => {
    await stack?.close();
  });

  const userOf = async (funds: number) => {
    const { id, wallet } = await newTestUser(stack.api, "user-write", funds);
    const { walletIndex, custody } = await stack.db.prisma.user.findUniqueOrThrow({ where: { id } });
    return { id, walletIndex, walletAddress: wallet, custody };
  };
  const deposit = (user: { walletAddress: string }, amount: bigint) => ({
    pulls: { spender: vaultAddress, value: amount },
    data: stack.chain.contracts.vault.interface.encodeFunctionData("deposit", [amount, user.walletAddress]),
  });
  const operation = () => ({ idempotencyKey: randomUUID(), requestHash: randomUUID() });

  it("answers once the mirror has the write's block, and derives the id of the event the indexer recorded", async () => {
    const user = await userOf(10);
    const sent = await userWrite.send({
      user,
      purpose: "vault.deposit",
      operation: operation(),
      to: vaultAddress,
      call: deposit(user, usdc(4)),
    });
    expect(sent.indexed).to.equal(true);
    // Read-your-writes: the mirror's cursor is at the write's block when it answers.
    const [cursor] = await stack.db.prisma.$queryRaw<{ blockNumber: number }[]>`
      SELECT "blockNumber" FROM "IndexerCursor" WHERE "chainId" = ${MIRRORED_CHAIN_ID}`;
    expect(cursor!.blockNumber).to.be.at.least(sent.blockNumber);
    const { args, eventId } = userWrite.eventOf<{ assets: bigint }>(stack.chain.contracts.vault, sent, "Deposit");
    expect(args.assets).to.equal(usdc(4));
    const recorded = await stack.db.prisma.domainEvent.findUnique({ where: { id: eventId("vault.deposit") } });
    expect(recorded).to.include({ type: "vault.deposit" });
    expect(userWrite.eventIds(sent, ["vault.deposit"])).to.include(eventId("vault.deposit"));
  });

  it("a wallet short of USDC is INSUFFICIENT_BALANCE on the domain's field; the domain's own mapping comes first", async () => {
    const user = await userOf(1);
    const short = await userWrite
      .send({
        user,
        purpose: "vault.deposit",
        operation: operation(),
        to: vaultAddress,
        call: deposit(user, usdc(3)),
        field: "depositAmount",
      })
      .catch((error: unknown) => error);
    expect(short).to.be.instanceOf(AppError);
    expect(short).to.include({ code: "INSUFFICIENT_BALANCE" });
    expect((short as AppError).details).to.deep.include({ field: "depositAmount" });

    const own = await userWrite
      .send({
        user,
        purpose: "vault.deposit",
        operation: operation(),
        to: vaultAddress,
        call: deposit(user, usdc(3)),
        reverts: (revert) =>
          revert.name === "ERC20InsufficientBalance" ? new AppError("AMOUNT_TOO_SMALL", "the domain's word") : undefined,
      })
      .catch((error: unknown) => error);
    expect(own).to.include({ code: "AMOUNT_TOO_SMALL", message: "the domain's word" });
  });

  it("a retry under the operation's key answers the first write and moves nothing more", async () => {
    const user = await userOf(10);
    const key = operation();
    const first = await userWrite.send({ user, purpose: "vault.deposit", operation: key, to: vaultAddress, call: deposit(user, usdc(2)) });
    const retry = await userWrite.send({ user, purpose: "vault.deposit", operation: key, to: vaultAddress, call: deposit(user, usdc(2)) });
    expect(retry.txHash).to.equal(first.txHash);
    expect(await stack.chain.contracts.usdc.balanceOf(user.walletAddress)).to.equal(usdc(8));
  });

  it("refuses a self-custody account's write with SIGNATURE_REQUIRED: the service holds no key of its wallet, nothing is recorded or sent", async () => {
    const user = await userOf(10);
    const recorded = () => stack.db.prisma.relayedRequest.count();
    const before = await recorded();
    const refused = await userWrite
      .send({
        user: { ...user, custody: "self" },
        purpose: "vault.deposit",
        operation: operation(),
        to: vaultAddress,
        call: deposit(user, usdc(2)),
      })
      .catch((error: unknown) => error);
    expect(refused).to.include({ code: "SIGNATURE_REQUIRED" });
    expect(await recorded()).to.equal(before);
    expect(await stack.chain.contracts.usdc.balanceOf(user.walletAddress)).to.equal(usdc(10));
  });
});
