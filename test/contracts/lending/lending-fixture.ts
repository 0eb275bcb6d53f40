// Deploys and wires the lending contracts the way the deployment script does (see docs/contracts-lending.md).
// Imported by the vault and loan-book flow tests; it declares no tests itself.
import type { HardhatEthers } from "@nomicfoundation/hardhat-ethers/types";

export const DAY = 86_400;
/** The first whole hour after `t`: a loan funded then is due exactly its whole days later (the loan book rounds a due date up to the hour). */
export const nextHour = (t: number) => (Math.floor(t / 3_600) + 1) * 3_600;
export const WAD = 10n ** 18n;

/** Whole USDC to micro-units (6 decimals). */
export const USDC = (n: number | bigint) => BigInt(n) * 1_000_000n;

/** A bytes32 off-chain loan reference from a label. */
export const ref = (ethers: HardhatEthers, label: string) => ethers.id(label);

export async function deployLending(ethers: HardhatEthers) {
  const [admin, operator, pauser, yielder, alice, bob, borrower, stranger, lender] = await ethers.getSigners();
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

  await vault.grantRole(await vault.LENDER_ROLE(), await book.getAddress());
  await vault.grantRole(await vault.PAUSER_ROLE(), pauser.address);
  await vault.grantRole(await vault.YIELD_ROLE(), yielder.address);
  await book.grantRole(await book.OPERATOR_ROLE(), operator.address);

  for (const user of [alice, bob, borrower, yielder, stranger, lender]) {
    await usdc.mint(user.address, USDC(1_000_000));
    await usdc.connect(user).approve(await vault.getAddress(), ethers.MaxUint256);
    await usdc.connect(user).approve(await book.getAddress(), ethers.MaxUint256);
  }
  return { usdc, forwarder, model, vault, book, admin, operator, pauser, yielder, alice, bob, borrower, stranger, lender };
}
