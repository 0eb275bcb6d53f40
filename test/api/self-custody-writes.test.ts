// Writes signed by the user's own wallet, relayed by the service (#46 item 2, D-119): an account
// signed in with Ethereum prepares a write (POST <path>/prepare answers EIP-712 typed data),
// its wallet signs, and the spec's own endpoint takes the signatures in Wallet-Signature headers
// and answers as the spec shows. The wallet never holds ETH. Every refusal is a 4xx with nothing sent.
import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { Interface, Signature, Wallet } from "ethers";
import { createSiweMessage } from "viem/siwe";
import { refFromUuid } from "../../core/refs.js";
import type { UserCallData } from "../../domain/transactions/calls.js";
import type { TestApi } from "../helpers/api.js";
import type { TestChain } from "../helpers/chain.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { waitForHead } from "../helpers/mirror.js";
import { type MoneyStack, newTestUser, startMoneyStack } from "../helpers/money-stack.js";
import { signTypedDataV4, type TypedDataV4 } from "../helpers/test-wallet.js";
import { until } from "../helpers/waiting.js";

const sign = signTypedDataV4;

describe(`writes signed by the user's own wallet (D-119, ${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(120_000);
  let stack: MoneyStack;
  let api: TestApi;
  let chain: TestChain;
  before(async () => {
    stack = await startMoneyStack();
    ({ api, chain } = stack);
  });
  after(async () => {
    await stack?.close();
  });

  /** A fresh key signed in with Ethereum, holding `usdc` USDC (minted to it) and no ETH. */
  async function selfCustody(usdc: bigint, wallet: Pick<Wallet, "address" | "signMessage" | "signTypedData"> = Wallet.createRandom()) {
    const nonce = (await api.request("POST", "/v1/auth/siwe/nonce")).body.data.nonce as string;
    const message = createSiweMessage({
      address: wallet.address as `0x${string}`,
      chainId: chain.deployment.chainId,
      domain: "127.0.0.1:5173",
      uri: "http://127.0.0.1:5173/",
      nonce,
      version: "1",
      issuedAt: api.clock.now(),
    });
    const signedIn = await api.request("POST", "/v1/auth/siwe/verify", { body: { message, signature: await wallet.signMessage(message) } });
    expect(signedIn.status, signedIn.text).to.equal(200);
    if (usdc > 0n) await (await chain.contracts.usdc.mint(wallet.address, usdc)).wait();
    return { wallet, token: signedIn.body.data.accessToken as string, id: signedIn.body.data.user.id as string };
  }

  const prepare = (token: string, path: string, body: unknown) => api.request("POST", `${path}/prepare`, { token, body });
  const send = (token: string, path: string, body: unknown, signatures: { request?: string; permit?: string }, key?: string) =>
    api.request("POST", path, {
      token,
      body,
      headers: {
        ...(signatures.request && { "wallet-signature": signatures.request }),
        ...(signatures.permit && { "wallet-permit-signature": signatures.permit }),
        ...(key && { "idempotency-key": key }),
      },
    });
  /** Prepares `body` for `path`, signs what it answers with `wallet`, and sends it. */
  async function signedWrite(token: string, wallet: Pick<Wallet, "signTypedData">, path: string, body: unknown, key?: string) {
    const prepared = await prepare(token, path, body);
    expect(prepared.status, prepared.text).to.equal(200);
    const { request, permit } = prepared.body.data as { request: TypedDataV4; permit: TypedDataV4 | null };
    const signatures = { request: await sign(wallet, request), permit: permit ? await sign(wallet, permit) : undefined };
    return { prepared: prepared.body.data, signatures, answer: await send(token, path, body, signatures, key) };
  }
  const shares = async (address: string) => (await chain.contracts.vault.balanceOf(address)) as bigint;
  const eth = (address: string) => chain.provider.getBalance(address);

  it("a deposit: prepared (a ForwardRequest of the wallet and a permit for exactly the amount), signed, sent; answered as the spec shows, no ETH spent", async () => {
    const { wallet, token } = await selfCustody(50_000_000n);
    // Without a signature the service cannot send it, and says how.
    const unsigned = await api.request("POST", "/v1/vault/deposit", { token, body: { amount: 10 } });
    expectErrorEnvelope(unsigned, 403, "SIGNATURE_REQUIRED");
    expect(unsigned.body.error.details).to.deep.include({ field: "Wallet-Signature" });

    const { prepared, answer } = await signedWrite(token, wallet, "/v1/vault/deposit", { amount: 10 });
    expect(prepared.signer).to.equal(wallet.address);
    expect(prepared.request.primaryType).to.equal("ForwardRequest");
    expect(prepared.request.domain).to.deep.equal({
      name: "TrustMintForwarder",
      version: "1",
      chainId: chain.deployment.chainId,
      verifyingContract: chain.deployment.contracts.forwarder!.address,
    });
    expect(prepared.request.message).to.include({ from: wallet.address, value: "0", nonce: "0" });
    expect(prepared.permit.primaryType).to.equal("Permit");
    expect(prepared.permit.message).to.include({ owner: wallet.address, value: "10000000" });
    expect(prepared.permit.message.spender.toLowerCase()).to.equal(chain.deployment.contracts.stakingVault!.address.toLowerCase());
    expect(Date.parse(prepared.expiresAt)).to.be.greaterThan(Date.now() - 60_000);

    expect(answer.status, answer.text).to.equal(200);
    expect(answer.body.data.depositAmount).to.equal("10.00");
    expect(answer.body.data.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(await shares(wallet.address)).to.be.greaterThan(0n);
    expect((await chain.contracts.usdc.balanceOf(wallet.address)) as bigint).to.equal(40_000_000n);
    // The permit was for exactly the amount: nothing is left allowed.
    expect((await chain.contracts.usdc.allowance(wallet.address, chain.deployment.contracts.stakingVault!.address)) as bigint).to.equal(0n);
    expect(await eth(wallet.address)).to.equal(0n);

    // The mirror shows it: position and transactions.
    const position = await api.request("GET", "/v1/vault/position", { token });
    expect(position.body.data.usdcValue).to.equal("10.00");
    const history = await api.request("GET", "/v1/vault/transactions", { token });
    expect(history.body.data.map((row: { txHash: string }) => row.txHash)).to.include(answer.body.data.txHash);
  });

  it("a withdrawal needs no permit; a second write takes the wallet's next nonce", async () => {
    const { wallet, token } = await selfCustody(20_000_000n);
    expect((await signedWrite(token, wallet, "/v1/vault/deposit", { amount: 20 })).answer.status).to.equal(200);
    const before = (await chain.contracts.usdc.balanceOf(wallet.address)) as bigint;
    const { prepared, answer } = await signedWrite(token, wallet, "/v1/vault/withdraw", { tmUSDCAmount: 5 });
    expect(prepared.permit).to.equal(null);
    expect(prepared.request.message.nonce).to.equal("1");
    expect(answer.status, answer.text).to.equal(200);
    expect((await chain.contracts.usdc.balanceOf(wallet.address)) as bigint).to.be.greaterThan(before);
    expect(await eth(wallet.address)).to.equal(0n);
  });

  it("refusals, nothing sent: another key's signature, another account sending it, a changed amount, a replay (and its retry with the same key answered again), a malformed header", async () => {
    const { wallet, token } = await selfCustody(30_000_000n);
    const path = "/v1/vault/deposit";
    const prepared = (await prepare(token, path, { amount: 5 })).body.data as { request: TypedDataV4; permit: TypedDataV4 };
    const signatures = { request: await sign(wallet, prepared.request), permit: await sign(wallet, prepared.permit) };

    // Signed by another key: refused, and the prepared request stays usable.
    const stranger = Wallet.createRandom();
    const wrongSigner = await send(
      token,
      path,
      { amount: 5 },
      { request: await sign(stranger, prepared.request), permit: signatures.permit },
    );
    expectErrorEnvelope(wrongSigner, 400, "SIGNATURE_MISMATCH");
    const wrongPermit = await send(
      token,
      path,
      { amount: 5 },
      { request: signatures.request, permit: await sign(stranger, prepared.permit) },
    );
    expectErrorEnvelope(wrongPermit, 400, "SIGNATURE_MISMATCH");
    expect(wrongPermit.body.error.details.field).to.equal("Wallet-Permit-Signature");
    const missingPermit = await send(token, path, { amount: 5 }, { request: signatures.request });
    expectErrorEnvelope(missingPermit, 403, "SIGNATURE_REQUIRED");
    // The same signature on another amount.
    expectErrorEnvelope(await send(token, path, { amount: 6 }, signatures), 400, "REQUEST_MISMATCH");
    // Another account sending this wallet's signatures: nothing of theirs was prepared, and what they prepare is theirs to sign.
    const other = await selfCustody(30_000_000n);
    expectErrorEnvelope(await send(other.token, path, { amount: 5 }, signatures), 400, "REQUEST_MISMATCH");
    expect((await prepare(other.token, path, { amount: 5 })).status).to.equal(200);
    expectErrorEnvelope(await send(other.token, path, { amount: 5 }, signatures), 400, "SIGNATURE_MISMATCH");
    expect(await shares(other.wallet.address)).to.equal(0n);
    const malformed = await send(token, path, { amount: 5 }, { request: "0x1234" });
    expectErrorEnvelope(malformed, 400, "VALIDATION_ERROR");
    expect(malformed.body.error.details.field).to.equal("Wallet-Signature");
    expect(await shares(wallet.address)).to.equal(0n);

    // Once, then never again; a retry under the first key gets the first answer.
    const key = randomUUID();
    const first = await send(token, path, { amount: 5 }, signatures, key);
    expect(first.status, first.text).to.equal(200);
    const sharesAfter = await shares(wallet.address);
    const retried = await send(token, path, { amount: 5 }, signatures, key);
    expect(retried.status).to.equal(200);
    expect(retried.headers.get("idempotent-replayed")).to.equal("true");
    expect(retried.body.data.txHash).to.equal(first.body.data.txHash);
    expectErrorEnvelope(await send(token, path, { amount: 5 }, signatures), 409, "REQUEST_REPLAYED");
    expect(await shares(wallet.address)).to.equal(sharesAfter);
  });

  it("one signed request sent three times at once goes out once; the others are REQUEST_REPLAYED", async () => {
    const { wallet, token } = await selfCustody(10_000_000n);
    const prepared = (await prepare(token, "/v1/vault/deposit", { amount: 4 })).body.data as { request: TypedDataV4; permit: TypedDataV4 };
    const signatures = { request: await sign(wallet, prepared.request), permit: await sign(wallet, prepared.permit) };
    const answers = await Promise.all([1, 2, 3].map(() => send(token, "/v1/vault/deposit", { amount: 4 }, signatures)));
    expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, 409, 409]);
    expect((await chain.contracts.usdc.balanceOf(wallet.address)) as bigint).to.equal(6_000_000n);
  });

  it("a refusal under an Idempotency-Key is not kept: the same key with a good signature goes through", async () => {
    const { wallet, token } = await selfCustody(10_000_000n);
    const key = randomUUID();
    expectErrorEnvelope(
      await api.request("POST", "/v1/vault/deposit", { token, body: { amount: 3 }, headers: { "idempotency-key": key } }),
      403,
      "SIGNATURE_REQUIRED",
    );
    const { answer } = await signedWrite(token, wallet, "/v1/vault/deposit", { amount: 3 }, key);
    expect(answer.status, answer.text).to.equal(200);
  });

  it("an empty wallet is refused at the prepare call, before anything is signed; a managed wallet's account has nothing to prepare", async () => {
    const { token } = await selfCustody(0n);
    expectErrorEnvelope(await prepare(token, "/v1/vault/deposit", { amount: 1 }), 400, "INSUFFICIENT_BALANCE");
    const managed = await newTestUser(api, "managed", 5);
    expectErrorEnvelope(await prepare(managed.token, "/v1/vault/deposit", { amount: 1 }), 409, "CONFLICT");
    const signedByNobody = await send(managed.token, "/v1/vault/deposit", { amount: 1 }, { request: `0x${"11".repeat(65)}` });
    expectErrorEnvelope(signedByNobody, 409, "CONFLICT");
  });

  it("a checkout's direct pay is one signature (D-120): USDC's ReceiveWithAuthorization of exactly the amount, bound to its payment; the service sends it", async () => {
    const { wallet, token } = await selfCustody(20_000_000n);
    const merchant = await newTestUser(api, "merchant", 0);
    const newPayment = async () => {
      const created = await api.request("POST", "/v1/payments", { token: merchant.token, body: { amount: 7, paymentMethods: ["direct"] } });
      expect(created.status, created.text).to.equal(201);
      return created.body.data.id as string;
    };
    const [first, second] = [await newPayment(), await newPayment()];
    const path = (id: string) => `/checkout/${id}/pay`;
    const prepared = await prepare(token, path(first), { method: "direct" });
    expect(prepared.status, prepared.text).to.equal(200);
    type Answered = TypedDataV4 & { primaryType: string; domain: Record<string, string>; message: Record<string, string> };
    const { request, permit } = prepared.body.data as { request: Answered; permit: null };
    expect(permit).to.equal(null);
    expect(request.primaryType).to.equal("ReceiveWithAuthorization");
    expect(request.domain.verifyingContract.toLowerCase()).to.equal((chain.contracts.usdc.target as string).toLowerCase());
    const routerAddress = chain.contracts.router.target as string;
    const merchantWallet = (await api.request("GET", "/v1/users/me", { token: merchant.token })).body.data.walletAddress as string;
    // The nonce is the router's own key of this payment's terms: the signature pays this payment and no other.
    const nonce = (await chain.contracts.router.paymentKey(refFromUuid(first), merchantWallet, 7_000_000n)) as string;
    expect(request.message).to.deep.include({ from: wallet.address, value: "7000000", validAfter: "0", nonce });
    expect(request.message.to.toLowerCase()).to.equal(routerAddress.toLowerCase());
    const signature = await sign(wallet, request);

    // Refusals, nothing sent: the signature on another payment, by another key, or with the permit's header alone.
    expectErrorEnvelope(await send(token, path(second), { method: "direct" }, { request: signature }), 400, "REQUEST_MISMATCH");
    expect((await prepare(token, path(second), { method: "direct" })).status).to.equal(200);
    expectErrorEnvelope(await send(token, path(second), { method: "direct" }, { request: signature }), 400, "SIGNATURE_MISMATCH");
    const forged = await sign(Wallet.createRandom(), request);
    expectErrorEnvelope(await send(token, path(first), { method: "direct" }, { request: forged }), 400, "SIGNATURE_MISMATCH");
    expectErrorEnvelope(await send(token, path(first), { method: "direct" }, { permit: signature }), 400, "VALIDATION_ERROR");
    expect((await chain.contracts.usdc.balanceOf(wallet.address)) as bigint).to.equal(20_000_000n);

    const key = randomUUID();
    const paid = await send(token, path(first), { method: "direct" }, { request: signature }, key);
    expect(paid.status, paid.text).to.equal(200);
    expect(paid.body.data).to.include({ status: "success", amount: 7, fee: 0.07, net: 6.93 });
    // The service's own transaction to the router carried it: the wallet spent no ETH and allowed nothing.
    const sent = await chain.provider.getTransaction(paid.body.data.txHash);
    expect(sent!.to!.toLowerCase()).to.equal(routerAddress.toLowerCase());
    expect(await eth(wallet.address)).to.equal(0n);
    expect((await chain.contracts.usdc.allowance(wallet.address, routerAddress)) as bigint).to.equal(0n);
    expect((await chain.contracts.usdc.balanceOf(wallet.address)) as bigint).to.equal(13_000_000n);
    expect((await chain.contracts.usdc.balanceOf(merchantWallet)) as bigint).to.equal(6_930_000n);
    const payment = await api.request("GET", `/v1/payments/${first}`, { token: merchant.token });
    expect(payment.body.data).to.include({ status: "success", txHash: paid.body.data.txHash });

    // The retry under its key answers again; the signature sent again pays nothing twice.
    const retried = await send(token, path(first), { method: "direct" }, { request: signature }, key);
    expect(retried.status).to.equal(200);
    expect(retried.body.data.txHash).to.equal(paid.body.data.txHash);
    expectErrorEnvelope(await send(token, path(first), { method: "direct" }, { request: signature }), 409, "ALREADY_PAID");
    expect((await chain.contracts.usdc.balanceOf(wallet.address)) as bigint).to.equal(13_000_000n);
  });

  it("an authorization someone else submitted first, in the same block as the service's: the payer's own money paid it, and it is answered as paid", async () => {
    const { wallet, token, id } = await selfCustody(10_000_000n);
    const merchant = await newTestUser(api, "merchant", 0);
    const payment = await api.request("POST", "/v1/payments", { token: merchant.token, body: { amount: 3, paymentMethods: ["direct"] } });
    const path = `/checkout/${payment.body.data.id}/pay`;
    const { request } = (await prepare(token, path, { method: "direct" })).body.data as {
      request: TypedDataV4 & { message: Record<string, string> };
    };
    const signature = await sign(wallet, request);
    const merchantWallet = (await api.request("GET", "/v1/users/me", { token: merchant.token })).body.data.walletAddress as string;
    const { v, r, s } = Signature.from(signature);
    const frontRunner = chain.contracts.router.connect(await chain.signer(8)) as typeof chain.contracts.router;
    await chain.setAutomine(false);
    try {
      const answering = send(token, path, { method: "direct" }, { request: signature });
      // The service's transaction waits in the pool; one who saw the signature there sends it too, paying more.
      let pooledHash = "";
      await until(async () => {
        const row = await stack.db.prisma.chainTransaction.findFirst({ where: { userId: id, purpose: "payment.pay" } });
        pooledHash = row?.txHash ?? "";
        return row !== null && (await chain.provider.getTransaction(row.txHash)) !== null;
      }, "the service's transaction in the pool");
      const fees = await chain.provider.getFeeData();
      const front = await frontRunner.getFunction("payWithAuthorization")(
        refFromUuid(payment.body.data.id),
        merchantWallet,
        3_000_000n,
        wallet.address,
        0n,
        BigInt(request.message.validBefore!),
        v,
        r,
        s,
        { gasLimit: 300_000n, maxPriorityFeePerGas: fees.maxFeePerGas! * 4n, maxFeePerGas: fees.maxFeePerGas! * 4n },
      );
      await chain.provider.send("evm_mine", []);
      const mined = await chain.provider.getTransactionReceipt(pooledHash);
      expect(mined!.status, "the service's own transaction reverted in the same block").to.equal(0);
      const paid = await answering;
      expect(paid.status, paid.text).to.equal(200);
      expect(paid.body.data).to.include({ status: "success", txHash: front.hash, amount: 3 });
    } finally {
      await chain.setAutomine(true);
    }
    expect((await chain.contracts.usdc.balanceOf(wallet.address)) as bigint).to.equal(7_000_000n);
  });

  it("a contract that takes no authorization (a router of an earlier deployment) is paid by the permit and the forwarded request instead", async () => {
    const { wallet, id } = await selfCustody(5_000_000n);
    const user = await stack.db.prisma.user.findUniqueOrThrow({ where: { id } });
    const router = chain.contracts.router;
    const terms = [`0x${"ab".repeat(32)}`, Wallet.createRandom().address, 1_000_000n] as const;
    // The router's own pay, and, as its twin, a function it does not have (what a router of an earlier version lacks).
    const missing = new Interface([
      "function payWithAuthorization(bytes32,address,uint256,address,uint256,uint256,uint8,bytes32,bytes32,bytes)",
    ]);
    const prepare = (data: NonNullable<UserCallData["byAuthorization"]>["data"]) =>
      api.services.relay!.prepareForSignature({
        user: { id, walletIndex: user.walletIndex, walletAddress: wallet.address },
        purpose: "payment.pay",
        idempotencyKey: randomUUID(),
        to: router.target as string,
        data: router.interface.encodeFunctionData("pay", terms),
        pulls: { spender: router.target as string, value: 1_000_000n },
        byAuthorization: { nonce: `0x${"00".repeat(32)}`, data },
      });
    const fallback = await prepare(({ from, validAfter, validBefore, v, r, s }) =>
      missing.encodeFunctionData("payWithAuthorization", [...terms, from, validAfter, validBefore, v, r, s, "0x"]),
    );
    expect(fallback.request.primaryType).to.equal("ForwardRequest");
    expect(fallback.permit?.primaryType).to.equal("Permit");
    const authorized = await prepare(({ from, validAfter, validBefore, v, r, s }) =>
      router.interface.encodeFunctionData("payWithAuthorization", [...terms, from, validAfter, validBefore, v, r, s]),
    );
    expect(authorized.request.primaryType).to.equal("ReceiveWithAuthorization");
    expect(authorized.permit).to.equal(null);
  });

  it("a request past its deadline is refused (REQUEST_EXPIRED), and a new one prepared after it goes through", async () => {
    const { wallet, token } = await selfCustody(10_000_000n);
    const prepared = (await prepare(token, "/v1/vault/deposit", { amount: 2 })).body.data as { request: TypedDataV4; permit: TypedDataV4 };
    const signatures = { request: await sign(wallet, prepared.request), permit: await sign(wallet, prepared.permit) };
    await chain.provider.send("evm_increaseTime", [601]);
    await chain.provider.send("evm_mine", []);
    expectErrorEnvelope(await send(token, "/v1/vault/deposit", { amount: 2 }, signatures), 400, "REQUEST_EXPIRED");
    expect(await shares(wallet.address)).to.equal(0n);
    const { answer } = await signedWrite(token, wallet, "/v1/vault/deposit", { amount: 2 });
    expect(answer.status, answer.text).to.equal(200);
  });

  it("every kind of write: a loan's repayment, the social vault's creation, deposit and instant withdrawal, a checkout's direct pay", async () => {
    const { wallet, token } = await selfCustody(200_000_000n);
    const signed = async (path: string, body: unknown) => {
      const { answer } = await signedWrite(token, wallet, path, body);
      expect(answer.status, `${path}: ${answer.text}`).to.be.oneOf([200, 201]);
      return answer.body.data;
    };

    // A loan from the pool (a saver's deposit its liquidity), funded by the sandbox to the wallet, repaid in full from it.
    const saver = await newTestUser(api, "saver", 100);
    expect((await api.request("POST", "/v1/vault/deposit", { token: saver.token, body: { amount: 100 } })).status).to.equal(200);
    const loan = await api.request("POST", "/v1/loans", { token, body: { amount: 20, duration: 7 } });
    expect(loan.status, loan.text).to.equal(200);
    const funded = await api.request("POST", `/dev/loans/${loan.body.data.id}/fund`, { token });
    expect(funded.status, funded.text).to.equal(200);
    const { remainingBalance } = (await api.request("GET", `/v1/loans/${loan.body.data.id}`, { token })).body.data;
    const repaid = await signed(`/v1/loans/${loan.body.data.id}/repay`, { amount: remainingBalance });
    expect(repaid.remainingBalance).to.equal(0);
    expect((await api.request("GET", `/v1/loans/${loan.body.data.id}`, { token })).body.data.status).to.equal("repaid");

    // The social vault: created by the wallet (the factory's clone at the address fixed by it), filled, and paid out of.
    const created = await signed("/v1/social-vault", {
      dailyLimit: 100,
      timelockDuration: 3_600,
      requiredSignatures: 1,
      duressPin: "4821",
    });
    expect(created.vaultAddress).to.equal(((await chain.contracts.factory.predictVault(wallet.address)) as string).toLowerCase());
    const deposited = await signed("/v1/social-vault/deposit", { amount: 30 });
    expect(deposited.txHash).to.match(/^0x[0-9a-f]{64}$/);
    const friend = Wallet.createRandom().address;
    await signed("/v1/social-vault/withdraw/instant", { amount: 12, recipient: friend });
    expect((await chain.contracts.usdc.balanceOf(friend)) as bigint).to.equal(12_000_000n);

    // A merchant's payment paid directly from the wallet at the checkout.
    const merchant = await newTestUser(api, "merchant", 0);
    const payment = await api.request("POST", "/v1/payments", {
      token: merchant.token,
      body: { amount: 7, paymentMethods: ["direct"], description: "a mug" },
    });
    expect(payment.status, payment.text).to.equal(201);
    const paid = await signed(`/checkout/${payment.body.data.id}/pay`, { method: "direct" });
    expect(paid.status).to.equal("success");
    expect((await api.request("GET", `/v1/payments/${payment.body.data.id}`, { token: merchant.token })).body.data.status).to.equal(
      "success",
    );
    expect(await eth(wallet.address)).to.equal(0n);
  });

  it("what the address did on the platform's contracts before it signed in is its account's: position, transactions, activity (XP once), Trust Score, after a sign-in that stopped too", async () => {
    // A wallet that used the vault directly, paying its own gas, before the service knew it.
    const key = Wallet.createRandom().connect(chain.provider);
    const funder = await chain.signer(7);
    await (await funder.sendTransaction({ to: key.address, value: 10n ** 17n })).wait();
    await (await chain.contracts.usdc.mint(key.address, 40_000_000n)).wait();
    const vaultAddress = chain.deployment.contracts.stakingVault!.address;
    const usdcAsKey = chain.contracts.usdc.connect(key) as typeof chain.contracts.usdc;
    const vaultAsKey = chain.contracts.vault.connect(key) as typeof chain.contracts.vault;
    await (await usdcAsKey.getFunction("approve")(vaultAddress, 40_000_000n)).wait();
    const direct = await (await vaultAsKey.getFunction("deposit")(30_000_000n, key.address)).wait();
    await waitForHead(stack.db, chain);

    // A first sign-in that stopped once it had made the account, before adopting: the next one adopts.
    await api.services.users.ownWalletAccount(key.address);
    const { token } = await selfCustody(0n, key);
    const position = (await api.request("GET", "/v1/vault/position", { token })).body.data;
    expect(position.tmUSDCBalance).to.not.equal("0.00");
    const history = (await api.request("GET", "/v1/vault/transactions", { token })).body.data as { txHash: string }[];
    expect(history.map((row) => row.txHash)).to.include(direct!.hash);
    const activity = async () => {
      const answer = await api.request("GET", "/v1/users/me/activity", { token });
      expect(answer.status, answer.text).to.equal(200);
      return answer.body.data as { type: string }[];
    };
    await until(
      async () => (await activity()).some((entry) => entry.type === "vault_deposit"),
      "the earlier deposit in the activity feed",
      10_000,
      200,
    );
    const me = (await api.request("GET", "/v1/users/me", { token })).body.data;
    expect(me.xp).to.be.greaterThan(0);
    // Held in the vault: the Trust Score counts it as it would a deposit made through the API.
    const fresh = await selfCustody(0n);
    const scoreOf = async (userToken: string, id: string) =>
      (await api.request("GET", `/v1/trust-score/${id}`, { token: userToken })).body.data.score as number;
    expect(await scoreOf(token, me.id)).to.be.greaterThan(await scoreOf(fresh.token, fresh.id));
    // Signing in again adopts nothing twice.
    const again = await selfCustody(0n, key);
    await api.services.rewards.drain(api.clock.now());
    expect((await api.request("GET", "/v1/users/me", { token: again.token })).body.data.xp).to.equal(me.xp);
  });
});
