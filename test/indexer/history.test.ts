// History before an address was known (#42 item 5, D-93), at the indexer: a social vault's
// predicted address funded before its creation (in an earlier block, or in the creation's own
// block), across a reorganisation that removes the creation; and a managed wallet's transfers from
// before its user, mirrored once however often the indexer fetches them.
import { expect } from "chai";
import type { Contract, JsonRpcSigner } from "ethers";
import type { Indexer } from "../../indexer/indexer.js";
import { startTestChain, type TestChain, usdc } from "../helpers/chain.js";
import { createTestDatabase, type TestDatabase } from "../helpers/database.js";
import { cleanReindex, dumpMirror, testIndexer, waitForHead } from "../helpers/mirror.js";

describe("indexer: history before an address was known", function () {
  this.timeout(120_000);
  let chain: TestChain;
  let db: TestDatabase;
  let indexer: Indexer | undefined;

  beforeEach(async () => {
    chain = await startTestChain();
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await indexer?.stop();
    await db?.destroy();
    await chain?.close();
  });

  const as = (contract: Contract, signer: JsonRpcSigner) => contract.connect(signer) as Contract;
  const mined = async (sent: Promise<{ wait(): Promise<unknown> }>) => (await sent).wait();
  const mint = (to: string, amount: bigint) => mined(chain.contracts.usdc.getFunction("mint")(to, amount));
  const usdcOf = async (address: string) => (await chain.contracts.usdc.balanceOf(address)) as bigint;
  const predicted = async (owner: JsonRpcSigner) =>
    ((await chain.contracts.factory.predictVault(await owner.getAddress())) as string).toLowerCase();
  const createVault = (owner: JsonRpcSigner) =>
    as(chain.contracts.factory, owner).getFunction("createVault")(usdc(100), 3_600, 1, `0x${"12".repeat(32)}`);
  const mirroredBalance = async (vault: string) =>
    (await db.prisma.socialVaultState.findUnique({ where: { chainId_address: { chainId: chain.deployment.chainId, address: vault } } }))
      ?.balance;

  it("counts USDC sent to a vault's predicted address before its creation, in an earlier block or its own, across a reorganisation", async () => {
    // Ranges of 2 blocks: the history of an address is read in many ranges.
    indexer = testIndexer(db, chain, { maxBlockRange: 2 });
    indexer.start();
    const early = await chain.signer(3);
    const sameBlock = await chain.signer(4);
    const earlyVault = await predicted(early);
    const sameBlockVault = await predicted(sameBlock);
    await mint(earlyVault, usdc(10));
    await chain.mine(5);
    await waitForHead(db, chain);

    // The other vault is funded and created in one block, the transfer first.
    await chain.setAutomine(false);
    const funding = chain.contracts.usdc.getFunction("mint")(sameBlockVault, usdc(4));
    const creation = createVault(sameBlock);
    await Promise.all([funding, creation]);
    await chain.mine(1);
    await chain.setAutomine(true);
    await (await creation).wait();

    const fork = await chain.snapshot();
    await mined(createVault(early));
    await mint(await early.getAddress(), usdc(5));
    await mined(as(chain.contracts.usdc, early).getFunction("approve")(earlyVault, usdc(5)));
    await mined(chain.at(["social/SocialVault.sol", "SocialVault"], earlyVault, early).getFunction("deposit")(usdc(5)));
    await waitForHead(db, chain);
    // Before (#42): 5 USDC and 0, what the vaults received after their creation only.
    expect(await mirroredBalance(earlyVault)).to.equal(usdc(15));
    expect(await usdcOf(earlyVault)).to.equal(usdc(15));
    expect(await mirroredBalance(sameBlockVault)).to.equal(usdc(4));
    expect(await usdcOf(sameBlockVault)).to.equal(usdc(4));

    // A reorganisation removes the creation and the deposit; the vault is created again later.
    await chain.revert(fork);
    await chain.mine(4);
    await mined(createVault(early));
    await waitForHead(db, chain);
    expect(await mirroredBalance(earlyVault)).to.equal(usdc(10));
    expect(await usdcOf(earlyVault)).to.equal(usdc(10));
    const transfers = await db.prisma.usdcTransfer.findMany({ where: { to: earlyVault } });
    expect(transfers.map((transfer) => transfer.amount)).to.deep.equal([usdc(10)]);
    // The same mirror as indexing the chain as it is now from scratch, in one range or block by block.
    const mirrored = await dumpMirror(db);
    expect(mirrored).to.deep.equal(await cleanReindex(chain));
    expect(mirrored).to.deep.equal(await cleanReindex(chain, { maxBlockRange: 1 }));
  });

  it("mirrors a managed wallet's transfers from before its user once, however often it fetches them", async () => {
    indexer = testIndexer(db, chain);
    indexer.start();
    const wallet = await chain.signer(5);
    const address = (await wallet.getAddress()).toLowerCase();
    const friend = await (await chain.signer(6)).getAddress();
    await mint(address, usdc(7));
    await mined(as(chain.contracts.usdc, wallet).getFunction("transfer")(friend, usdc(2)));
    // A transfer to the staking vault is mirrored already (the vault is the platform's): it must not come twice.
    await mined(as(chain.contracts.usdc, wallet).getFunction("approve")(chain.deployment.contracts.stakingVault!.address, usdc(1)));
    await mined(as(chain.contracts.vault, wallet).getFunction("deposit")(usdc(1), address));
    await waitForHead(db, chain);
    const transfersOf = () =>
      db.prisma.usdcTransfer.findMany({ where: { OR: [{ from: address }, { to: address }] }, orderBy: { blockNumber: "asc" } });
    expect(await transfersOf()).to.have.length(1);

    await db.prisma.user.create({
      data: {
        id: "user-late",
        subject: "late",
        displayName: "Late",
        walletAddress: await wallet.getAddress(),
        createdAt: new Date(),
        updatedAt: new Date(),
      },
    });
    await chain.mine(1);
    await waitForHead(db, chain);
    const mirrored = await transfersOf();
    expect(mirrored.map((transfer) => transfer.amount)).to.deep.equal([usdc(7), usdc(2), usdc(1)]);
    const balance = mirrored.reduce((sum, t) => sum + (t.to === address ? t.amount : -t.amount), 0n);
    expect(balance).to.equal(await usdcOf(address));
    expect(balance).to.equal(usdc(4));
    // No domain event for a fact from before the account: only the vault deposit's, which named no user then.
    const events = await db.prisma.domainEvent.findMany({ where: { chainId: chain.deployment.chainId } });
    expect(events.map((event) => [event.type, event.userId])).to.deep.equal([["vault.deposit", null]]);
    const once = await dumpMirror(db);

    // A restart, then one that lost the wallet index (an existing mirror after the upgrade): fetched again, nothing twice.
    for (const forget of [false, true]) {
      await indexer.stop();
      if (forget) await db.sql.query(`UPDATE "IndexerCursor" SET "walletIndex" = NULL`);
      indexer = testIndexer(db, chain);
      indexer.start();
      await chain.mine(1);
      await waitForHead(db, chain);
      expect(await dumpMirror(db)).to.deep.equal(once);
    }
    const { rows } = await db.sql.query<{ walletIndex: number }>(`SELECT "walletIndex" FROM "IndexerCursor"`);
    expect(rows[0]?.walletIndex).to.equal((await db.prisma.user.findUniqueOrThrow({ where: { id: "user-late" } })).walletIndex);
  });
});
