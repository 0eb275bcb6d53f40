// Deploys the payment router the way the platform wires it (MockUSDC, the TrustMintForwarder, the lending pool that
// funds payments on credit, the admin, the treasury and the service's operator) with funded payers. Imported by the
// payment router's flow tests; it declares no tests itself.
import type { HardhatEthers } from "@nomicfoundation/hardhat-ethers/types";
import { AbiCoder, type BaseContract, keccak256 } from "ethers";
import { USDC } from "../lending/lending-fixture.js";
import { managedWallet } from "../metatx/metatx-helpers.js";

export { USDC };

export const BPS = 10_000n;
export const DEFAULT_FEE_BPS = 100n;
export const MAX_FEE_BPS = 1_000n;
export const MAX_UINT128 = 2n ** 128n - 1n;

/** The router's fee: `amount * feeBps / 10_000`, rounded down. */
export const feeOf = (amount: bigint, feeBps: bigint = DEFAULT_FEE_BPS) => (amount * feeBps) / BPS;

/** A payment's key as the interface specifies it: `keccak256(abi.encode(ref, merchant, amount))`. */
export const paymentKeyOf = (ref: string, merchant: string, amount: bigint) =>
  keccak256(AbiCoder.defaultAbiCoder().encode(["bytes32", "address", "uint256"], [ref, merchant, amount]));

/** What `depositor` deposited in the vault: the pool's liquidity for payments on credit. */
export const POOL = USDC(100_000);

/**
 * The router with the default 1 % fee, wired to the lending pool as the deployment does: the vault's LENDER_ROLE to
 * the loan book, the loan book's OPERATOR_ROLE to the router, the router's OPERATOR_ROLE to `operator` (the
 * service), the vault's PAUSER_ROLE to the admin; `depositor` deposited POOL in the vault. `payer` and `otherPayer`
 * hold 1,000,000 USDC each and approved the router without limit; `merchant` and `otherMerchant` hold nothing and
 * approved the router without limit (for refunds); `carol` holds 10,000 USDC and approved nothing; `relayer` pays
 * the gas of forwarded requests; `user` (a payer) and `shop` (a merchant) are managed wallets without ETH, `user`
 * with 10,000 USDC, neither with any allowance.
 */
export async function deployPayments(ethers: HardhatEthers) {
  const [admin, treasury, payer, otherPayer, merchant, otherMerchant, carol, stranger, newTreasury, relayer, operator, depositor] =
    await ethers.getSigners();
  const usdc = await ethers.deployContract("MockUSDC", [admin.address]);
  const forwarder = await ethers.deployContract("TrustMintForwarder");
  const model = await ethers.deployContract("InterestRateModel", [admin.address]);
  const vault = await ethers.deployContract("StakingVault", [
    await usdc.getAddress(),
    await model.getAddress(),
    admin.address,
    await forwarder.getAddress(),
  ]);
  const book = await ethers.deployContract("LoanBook", [await vault.getAddress(), admin.address, await forwarder.getAddress()]);
  const router = await ethers.deployContract("PaymentRouter", [
    await usdc.getAddress(),
    await book.getAddress(),
    admin.address,
    treasury.address,
    await forwarder.getAddress(),
  ]);
  const routerAddress = await router.getAddress();
  await vault.grantRole(await vault.LENDER_ROLE(), await book.getAddress());
  await vault.grantRole(await vault.PAUSER_ROLE(), admin.address);
  await book.grantRole(await book.OPERATOR_ROLE(), routerAddress);
  await book.grantRole(await book.REFUNDER_ROLE(), routerAddress);
  await router.grantRole(await router.OPERATOR_ROLE(), operator!.address);

  await usdc.mint(depositor!.address, POOL);
  await usdc.connect(depositor).approve(await vault.getAddress(), POOL);
  await vault.connect(depositor).deposit(POOL, depositor!.address);

  for (const account of [payer!, otherPayer!]) {
    await usdc.mint(account.address, USDC(1_000_000));
    await usdc.connect(account).approve(routerAddress, ethers.MaxUint256);
  }
  for (const account of [merchant!, otherMerchant!]) {
    await usdc.connect(account).approve(routerAddress, ethers.MaxUint256);
  }
  await usdc.mint(carol!.address, USDC(10_000));

  const user = managedWallet(ethers, "payments user");
  const shop = managedWallet(ethers, "payments shop");
  await usdc.mint(user.address, USDC(10_000));

  return {
    usdc,
    forwarder,
    model,
    vault,
    book,
    router,
    admin: admin!,
    treasury: treasury!,
    payer: payer!,
    otherPayer: otherPayer!,
    merchant: merchant!,
    otherMerchant: otherMerchant!,
    carol: carol!,
    stranger: stranger!,
    newTreasury: newTreasury!,
    relayer: relayer!,
    operator: operator!,
    depositor: depositor!,
    user,
    shop,
  };
}

export type PaymentsFixture = Awaited<ReturnType<typeof deployPayments>>;

/** What can be named by an address: an account, a wallet or a contract. */
type Holder = string | { address: string } | BaseContract;

async function addressOf(holder: Holder): Promise<string> {
  if (typeof holder === "string") return holder;
  if ("address" in holder && typeof holder.address === "string") return holder.address;
  return (holder as BaseContract).getAddress();
}

/** The USDC balances of `holders`, in order. */
export async function balancesOf(usdc: PaymentsFixture["usdc"], holders: Holder[]): Promise<bigint[]> {
  return Promise.all(holders.map(async (holder) => usdc.balanceOf(await addressOf(holder))));
}

/** The change of each holder's USDC balance over `action` (after minus before), in order. */
export async function balanceChanges(usdc: PaymentsFixture["usdc"], holders: Holder[], action: () => Promise<unknown>): Promise<bigint[]> {
  const before = await balancesOf(usdc, holders);
  await action();
  const after = await balancesOf(usdc, holders);
  return after.map((balance, i) => balance - before[i]!);
}
