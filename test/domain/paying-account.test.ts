// The paying account at the node (domain/transactions/paying-account.ts), on a real embedded
// chain, without the rest of the money path: signed bytes broadcast in nonce order in one round
// trip, what each kind of refusal means, a gap filled, and a broadcast nobody answered not taken
// for a refusal. Each rule here, broken, fails its test.
import { expect } from "chai";
import { JsonRpcProvider, Wallet } from "ethers";
import { connectRpc, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { createPayingAccount, NonceTakenError, type PayingAccount } from "../../domain/transactions/paying-account.js";

/** Hardhat's second development account (funded with ETH on every development chain). */
const KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const OTHER = "0x000000000000000000000000000000000000bEEF";

describe("the paying account at the node", function () {
  this.timeout(60_000);
  let chain: EmbeddedChain;
  let provider: JsonRpcProvider;
  let chainId: number;
  let account: Wallet;
  let paying: PayingAccount;

  before(async () => {
    chain = await startEmbeddedChain("127.0.0.1", 0);
    ({ provider, chainId } = await connectRpc(chain.rpcUrl));
    account = new Wallet(KEY, provider);
    paying = createPayingAccount({ provider, chainId, account });
  });
  after(async () => {
    provider?.destroy();
    await chain?.close();
  });

  const nextNonce = () => provider.getTransactionCount(account.address, "pending");
  const transfer = async (nonce: number, value = 1n, gasLimit = 21_000n) =>
    paying.sign({ nonce, to: OTHER, value, gasLimit, ...(await paying.fees()) });

  it("broadcasts signed transactions in nonce order in one round trip, with the receipts an automining node has at once", async () => {
    const first = await nextNonce();
    const signed = await Promise.all([0, 1, 2].map((i) => transfer(first + i, BigInt(i + 1))));
    const calls: unknown[] = [];
    const send = provider._send.bind(provider);
    provider._send = async (payload) => {
      calls.push(payload);
      return send(payload);
    };
    try {
      const results = await paying.broadcast(signed);
      expect(calls).to.have.length(1);
      expect(results.map((result) => result.error)).to.deep.equal([undefined, undefined, undefined]);
      expect(results.map((result) => result.receipt?.hash)).to.deep.equal(signed.map((item) => item.txHash));
      expect(results.map((result) => result.receipt?.status)).to.deep.equal([1, 1, 1]);
    } finally {
      provider._send = send;
    }
    expect(await nextNonce()).to.equal(first + 3);
  });

  it("reads each refusal for what it is: the same bytes again are sent, other bytes at a used nonce can never be, a nonce ahead waits", async () => {
    const nonce = await nextNonce();
    const mined = await transfer(nonce);
    await paying.broadcast([mined]);

    const [again] = await paying.broadcast([mined]);
    expect(again!.error).to.be.instanceOf(Error);
    expect(await paying.refusal(mined.txHash, again!.error!)).to.equal("sent");

    const rival = await transfer(nonce, 2n);
    const [taken] = await paying.broadcast([rival]);
    expect(await paying.refusal(rival.txHash, taken!.error!)).to.be.instanceOf(NonceTakenError);

    const ahead = await transfer(nonce + 5);
    const [early] = await paying.broadcast([ahead]);
    expect(await paying.refusal(ahead.txHash, early!.error!)).to.equal("ahead");

    // Anything else is the node's refusal as it came (here: too little gas for a transfer).
    const starved = await transfer(nonce + 1, 1n, 20_000n);
    const [refused] = await paying.broadcast([starved]);
    const meaning = await paying.refusal(starved.txHash, refused!.error!);
    expect(meaning).to.equal(refused!.error);
  });

  it("sendRaw takes bytes already mined as sent, and fillNonce unblocks the nonces behind a gap", async () => {
    const nonce = await nextNonce();
    const mined = await transfer(nonce);
    expect((await paying.sendRaw(mined.rawTx))?.hash).to.equal(mined.txHash);
    expect(await paying.sendRaw(mined.rawTx)).to.equal(undefined);

    // nonce + 2 is ahead of a gap at nonce + 1, which nothing will fill but fillNonce.
    const behind = await transfer(nonce + 2);
    const [blocked] = await paying.broadcast([behind]);
    expect(await paying.refusal(behind.txHash, blocked!.error!)).to.equal("ahead");
    await paying.fillNonce(nonce + 1);
    // The filler: a zero-value transfer to the paying account itself, at the gap's nonce.
    const [filler] = (await provider.getBlock("latest", true))!.prefetchedTransactions;
    expect(filler).to.deep.include({ to: account.address, value: 0n, nonce: nonce + 1 });
    expect((await paying.sendRaw(behind.rawTx))?.status).to.equal(1);
  });

  it("a broadcast the node never answered is not a refusal: the bytes may have arrived, so nothing is reported refused", async () => {
    const unreachable = new JsonRpcProvider("http://127.0.0.1:9", chainId, { staticNetwork: true });
    try {
      const cut = createPayingAccount({ provider: unreachable, chainId, account: new Wallet(KEY) });
      const signed = await transfer(await nextNonce());
      expect(await cut.broadcast([signed, signed])).to.deep.equal([{}, {}]);
    } finally {
      unreachable.destroy();
    }
  });
});
