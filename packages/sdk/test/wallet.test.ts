import { ApiError, createClient, type TrustMintClient, type WalletSigner } from "@trustmint/sdk";
import { expect } from "chai";
import { Wallet } from "ethers";
import { createWalletClient, custom } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { eip1193Wallet } from "../../../test/helpers/test-wallet.js";
import { apiErrorOf, sharedService, signIn } from "./support.js";

// The user's own wallet signs their writes (D-119): with `wallet` given, the client prepares each
// write, has the wallet sign it, and sends it, all in the one call; with each kind of signer.

describe("@trustmint/sdk: writes signed by the user's own wallet, against npm start", function () {
  this.timeout(180_000);
  let baseUrl: string;
  let anonymous: TrustMintClient;
  const uri = "http://127.0.0.1:5173/app";

  before(async () => {
    baseUrl = (await sharedService()).url;
    anonymous = createClient({ baseUrl });
  });

  /** Signs `signer` in (SIWE), and a client of its account that lets it sign; `funds` USDC from the sandbox's faucet. */
  async function selfCustody(signer: WalletSigner, funds: number) {
    const { accessToken, user } = await anonymous.auth.signIn(signer, { uri });
    const client = createClient({ baseUrl, getToken: async () => accessToken, wallet: signer });
    await client.sandbox.faucet({ amount: funds });
    return { client, address: user.walletAddress };
  }

  it("an ethers signer: vault.deposit({ amount }) is prepared, signed (a permit and the request) and sent in one call; a withdrawal signs once", async () => {
    const key = Wallet.createRandom();
    const signatures: string[] = [];
    const signer = {
      getAddress: async () => key.address,
      signMessage: (message: string) => key.signMessage(message),
      signTypedData: (...args: Parameters<Wallet["signTypedData"]>) => {
        signatures.push(Object.keys(args[1])[0]!);
        return key.signTypedData(...args);
      },
    };
    const { client } = await selfCustody(signer, 25);
    const deposit = await client.vault.deposit({ amount: 10 });
    expect(deposit.depositAmount).to.equal("10.00");
    expect(deposit.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(signatures.sort()).to.deep.equal(["ForwardRequest", "Permit"]);
    expect((await client.vault.position()).tmUSDCBalance).to.equal(deposit.newBalance);

    signatures.length = 0;
    const withdrawal = await client.vault.withdraw({ tmUSDCAmount: Number(deposit.tmUSDCReceived) });
    expect(withdrawal.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(signatures).to.deep.equal(["ForwardRequest"]);
  });

  it("an EIP-1193 provider (eth_signTypedData_v4 of the JSON it is given) and a viem wallet client", async () => {
    const browserKey = Wallet.createRandom();
    const { provider, asked } = eip1193Wallet(browserKey);
    const viaProvider = await selfCustody(provider, 12);
    expect(
      (await viaProvider.client.socialVault.create({ dailyLimit: 50, timelockDuration: 3_600, requiredSignatures: 1, duressPin: "2468" }))
        .vaultAddress,
    ).to.match(/^0x[0-9a-f]{40}$/);
    expect((await viaProvider.client.socialVault.deposit({ amount: 5 })).txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(asked.filter((method) => method === "eth_signTypedData_v4")).to.have.length(3);

    const account = privateKeyToAccount(generatePrivateKey());
    const walletClient = createWalletClient({ account, transport: custom({ request: async () => null }) });
    const viaViem = await selfCustody(walletClient, 8);
    expect((await viaViem.client.vault.deposit({ amount: 3 })).depositAmount).to.equal("3.00");
  });

  it("refusals come back as the API's errors: the prepare call's (an empty wallet), and a managed account's writes need no signature", async () => {
    const empty = await selfCustody(Wallet.createRandom(), 0).catch(() => null);
    expect(empty).to.equal(null); // the faucet refuses 0
    const broke = Wallet.createRandom();
    const { accessToken } = await anonymous.auth.signIn(broke, { uri });
    const client = createClient({ baseUrl, getToken: async () => accessToken, wallet: broke });
    const error = await apiErrorOf(client.vault.deposit({ amount: 1 }));
    expect(error).to.be.instanceOf(ApiError);
    expect(error.code).to.equal("INSUFFICIENT_BALANCE");

    // A managed wallet's account with a wallet given: its write goes through unsigned.
    const managed = await signIn(baseUrl, "sdk-managed", { funds: 5, client: { wallet: Wallet.createRandom() } });
    expect((await managed.client.vault.deposit({ amount: 2 })).depositAmount).to.equal("2.00");
  });

  it("an identity provider's account links its wallet (auth.linkWallet), chooses it, and the wallet signs its deposit", async () => {
    const key = Wallet.createRandom();
    const user = await signIn(baseUrl, "sdk-linker", { client: { wallet: key } });
    const linked = await user.client.auth.linkWallet(key, { uri });
    expect(linked).to.include({ address: key.address, custody: "self", chosen: false });
    const chosen = await user.client.users.chooseWallet({ address: key.address });
    expect(chosen).to.include({ walletAddress: key.address, custody: "self" });
    expect((await user.client.users.wallets()).map((wallet) => [wallet.custody, wallet.chosen])).to.deep.equal([
      ["managed", false],
      ["self", true],
    ]);
    await user.client.sandbox.faucet({ amount: 6 });
    expect((await user.client.vault.deposit({ amount: 5 })).depositAmount).to.equal("5.00");
  });
});
