// The batched gasless path of `npm run bench:gas`: managed wallets' requests relayed N at a time in
// one `forwarder.executeBatch(requests, relayer)`, as the service is about to send them, beside the
// same call sent directly by a wallet that pays its own gas. Gas per request = the batch's gasUsed / N.
// Every wallet is in steady state when measured: it has used the forwarder before (nonce > 0), holds
// tmUSDC, has an open loan already partly repaid, and its USDC allowance is set (an exact permit the
// relayer applied, not counted; the direct wallet's exact `approve`, not counted either).
import { Signature, type Wallet } from "ethers";
import type { network } from "hardhat";
import { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN, PERMIT_TYPES } from "../../core/eip712.js";

type Connection = Awaited<ReturnType<typeof network.create>>;
type Signer = Awaited<ReturnType<Connection["ethers"]["getSigners"]>>[number];

export interface RelayBenchSetup {
  connection: Pick<Connection, "ethers" | "networkHelpers">;
  addresses: { usdc: string; vault: string; loanBook: string; forwarder: string };
  /** Holds USDC's FAUCET_ROLE and the LoanBook's OPERATOR_ROLE. */
  admin: Signer;
  /** Sends the batches; also their refund receiver (non-zero: a failing request is skipped, not fatal). */
  relayer: Signer;
  /** The wallet that calls the contracts itself; used by nothing else. */
  direct: Signer;
}

const SIZES = [1, 10, 50] as const;
// As the service's FORWARD_GAS_HEADROOM_PERCENT (domain/transactions/user-transactions.ts): the
// request's `gas` is the estimate of the user's own call plus 25 %.
const HEADROOM_PERCENT = 125n;
// The forwarder's own work per request on top of the gas it forwards (calldata, signature,
// nonce, event: 22.9k measured for a request alone), and the transaction's base, with room to spare.
const PER_REQUEST_GAS = 40_000n;
const BATCH_BASE_GAS = 60_000n;
const USDC = (amount: number) => BigInt(amount) * 1_000_000n;
const DEPOSIT = USDC(1_000);
const REPAYMENT = USDC(10);
const HOUR = 3600;

/** Runs the batches and prints their table, ending with one `relayed_at_10/direct:` line per operation. */
export async function benchRelayedBatches(setup: RelayBenchSetup) {
  const { ethers, networkHelpers } = setup.connection;
  const { admin, relayer, direct, addresses } = setup;
  const usdc = await ethers.getContractAt("MockUSDC", addresses.usdc);
  const vault = await ethers.getContractAt("StakingVault", addresses.vault);
  const loanBook = await ethers.getContractAt("LoanBook", addresses.loanBook);
  const forwarder = await ethers.getContractAt("TrustMintForwarder", addresses.forwarder);
  const chainId = (await ethers.provider.getNetwork()).chainId;
  const forwarderDomain = { ...FORWARDER_DOMAIN, chainId, verifyingContract: addresses.forwarder };
  const permitDomain = { name: await usdc.name(), version: await usdc.version(), chainId, verifyingContract: addresses.usdc };
  const loanOf = new Map<string, bigint>();

  const gasOf = async (sent: Promise<{ wait(): Promise<{ gasUsed: bigint } | null> }>) => (await (await sent).wait())!.gasUsed;

  async function fundLoan(borrower: string) {
    await loanBook.connect(admin).fundLoan(ethers.id(`bench-batch-loan-${borrower}`), borrower, USDC(100), USDC(3), USDC(10), 30);
    loanOf.set(borrower, await loanBook.loanCount());
  }

  /** An exact allowance for `spender`, by the wallet's permit that the relayer applies (not measured). */
  async function allow(wallet: Wallet, spender: string, value: bigint) {
    const deadline = BigInt((await networkHelpers.time.latest()) + HOUR);
    const message = { owner: wallet.address, spender, value, nonce: await usdc.nonces(wallet.address), deadline };
    const { v, r, s } = Signature.from(await wallet.signTypedData(permitDomain, PERMIT_TYPES, message));
    await usdc.connect(relayer).permit(wallet.address, spender, value, deadline, v, r, s);
  }

  /** One executeBatch of each wallet's request to `to`; checks that all N executed with success; its gasUsed. */
  async function relay(wallets: Wallet[], to: string, dataOf: (wallet: Wallet) => Promise<string>) {
    const deadline = BigInt((await networkHelpers.time.latest()) + HOUR);
    const requests = [];
    const nonces: bigint[] = [];
    for (const wallet of wallets) {
      const data = await dataOf(wallet);
      // What the service signs: the user's own call estimated from its address, plus the headroom.
      const gas = ((await ethers.provider.estimateGas({ from: wallet.address, to, data })) * HEADROOM_PERCENT) / 100n;
      const nonce = await forwarder.nonces(wallet.address);
      const message = { from: wallet.address, to, value: 0n, gas, nonce, deadline, data };
      const signature = await wallet.signTypedData(forwarderDomain, FORWARD_REQUEST_TYPES, message);
      requests.push({ from: wallet.address, to, value: 0n, gas, deadline, data, signature });
      nonces.push(nonce);
    }
    // The forwarder passes each request's `gas` on and keeps 1/64 of it back (EIP-150).
    const gasLimit = requests.reduce((sum, request) => sum + (request.gas * 64n) / 63n + PER_REQUEST_GAS, BATCH_BASE_GAS);
    const receipt = (await (await forwarder.connect(relayer).executeBatch(requests, relayer.address, { gasLimit })).wait())!;
    const executed = receipt.logs
      .filter((log) => log.address.toLowerCase() === addresses.forwarder.toLowerCase())
      .map((log) => forwarder.interface.parseLog(log))
      .filter((event) => event?.name === "ExecutedForwardRequest")
      .map((event) => event!.args as unknown as { signer: string; nonce: bigint; success: boolean });
    const honest =
      receipt.status === 1 &&
      executed.length === wallets.length &&
      executed.every((event, i) => event.success && event.signer === wallets[i]!.address && event.nonce === nonces[i]);
    if (!honest) throw new Error(`executeBatch of ${wallets.length}: not every request executed with success`);
    return receipt.gasUsed;
  }

  const deposit = async (wallet: Wallet) => {
    await allow(wallet, addresses.vault, DEPOSIT);
    return vault.interface.encodeFunctionData("deposit", [DEPOSIT, wallet.address]);
  };
  // What the service sends for a withdrawal (domain/vault/service.ts): redeem(shares, wallet, wallet), here a quarter.
  const redeem = async (wallet: Wallet) => {
    const shares = (await vault.balanceOf(wallet.address)) / 4n;
    return vault.interface.encodeFunctionData("redeem", [shares, wallet.address, wallet.address]);
  };
  const repay = async (wallet: Wallet) => {
    await allow(wallet, addresses.loanBook, REPAYMENT);
    return loanBook.interface.encodeFunctionData("repay", [loanOf.get(wallet.address)!, REPAYMENT]);
  };

  // The direct wallet: a first deposit and a first partial repayment, then the measured calls.
  await usdc.connect(admin).mint(direct.address, USDC(100_000));
  await usdc.connect(direct).approve(addresses.vault, DEPOSIT);
  await vault.connect(direct).deposit(DEPOSIT, direct.address);
  await fundLoan(direct.address);
  await usdc.connect(direct).approve(addresses.loanBook, REPAYMENT);
  await loanBook.connect(direct).repay(loanOf.get(direct.address)!, REPAYMENT);
  await usdc.connect(direct).approve(addresses.vault, DEPOSIT);
  const directDeposit = await gasOf(vault.connect(direct).deposit(DEPOSIT, direct.address));
  const shares = (await vault.balanceOf(direct.address)) / 4n;
  const directRedeem = await gasOf(vault.connect(direct).redeem(shares, direct.address, direct.address));
  await usdc.connect(direct).approve(addresses.loanBook, REPAYMENT);
  const directRepay = await gasOf(loanBook.connect(direct).repay(loanOf.get(direct.address)!, REPAYMENT));

  // Per size, N fresh wallets brought to the same state through the forwarder, then measured.
  const perRequest = { deposit: [] as bigint[], redeem: [] as bigint[], repay: [] as bigint[] };
  for (const size of SIZES) {
    const wallets = Array.from(
      { length: size },
      (_, i) => new ethers.Wallet(ethers.id(`bench batch ${size} wallet ${i}`), ethers.provider),
    );
    for (const wallet of wallets) await usdc.connect(admin).mint(wallet.address, USDC(100_000));
    await relay(wallets, addresses.vault, deposit); // first deposit: forwarder nonce 0 -> 1, a new holder
    for (const wallet of wallets) await fundLoan(wallet.address);
    await relay(wallets, addresses.loanBook, repay); // first partial repayment: nonce 1 -> 2
    for (const wallet of wallets) {
      if ((await forwarder.nonces(wallet.address)) === 0n) throw new Error("a measured wallet has not used the forwarder");
    }
    perRequest.deposit.push((await relay(wallets, addresses.vault, deposit)) / BigInt(size));
    perRequest.redeem.push((await relay(wallets, addresses.vault, redeem)) / BigInt(size));
    perRequest.repay.push((await relay(wallets, addresses.loanBook, repay)) / BigInt(size));
  }

  const ratio = (a: bigint, b: bigint) => (Number(a) / Number(b)).toFixed(3);
  const rows: [string, bigint, bigint[]][] = [
    ["deposit (existing holder)", directDeposit, perRequest.deposit],
    ["withdraw = redeem (part)", directRedeem, perRequest.redeem],
    ["repay (partial, open loan)", directRepay, perRequest.repay],
  ];
  const column = (cells: string[]) => cells.map((cell) => cell.padStart(7)).join(" ");
  const sizes = column(SIZES.map((size) => `N=${size}`));
  console.log("");
  console.log("gasless path in batches: one forwarder.executeBatch of N managed wallets' requests, gas per request, vs the direct call;");
  console.log(
    "steady state: every wallet has used the forwarder before (nonce > 0), holds tmUSDC, its loan is partly repaid, allowance set:",
  );
  console.log(`${"".padEnd(37)} ${"relayed, gas/request".padEnd(23)}  relayed / direct`);
  console.log(`${"operation".padEnd(28)} ${"direct".padStart(8)} ${sizes}  ${sizes}`);
  for (const [name, directGas, relayed] of rows) {
    const gas = column(relayed.map(String));
    console.log(`${name.padEnd(28)} ${directGas.toString().padStart(8)} ${gas}  ${column(relayed.map((g) => ratio(g, directGas)))}`);
  }
  for (const [name, directGas, relayed] of rows) {
    console.log(`relayed_at_10/direct: ${ratio(relayed[SIZES.indexOf(10)]!, directGas)} (${name})`);
  }
}
