// `npm run bench:gas`: gas of every user operation on the platform contracts, beside a plain
// OpenZeppelin ERC-4626 vault measured in the same run and state (the baseline), and one
// above-limit social-vault withdrawal with two guardian approvals beside a Safe 2-of-3 with a
// Zodiac Delay queue (153,022 gas measured on this machine for enqueue plus execute).
// Last line: `ratio: <worst of deposit and redeem, ours / plain>`.
import { network } from "hardhat";

const SAFE_WITH_DELAY_GAS = 153_022n;
const USDC = (amount: number) => BigInt(amount) * 1_000_000n;
const HOUR = 3600;

const { ethers, networkHelpers } = await network.create();
const [admin, alice, bob, borrower, owner, guardian1, guardian2, recipient] = await ethers.getSigners();

type Sent = Promise<{ wait(): Promise<{ gasUsed: bigint } | null> }>;
const gasOf = async (tx: Sent) => (await (await tx).wait())!.gasUsed;

const usdc = await ethers.deployContract("MockUSDC", [admin.address]);
for (const who of [alice, bob, borrower, owner, recipient]) await usdc.mint(who.address, USDC(1_000_000));

// --- staking vault vs plain ERC-4626, same state: a first depositor already in both ---
const plain = await ethers.deployContract("PlainERC4626", [await usdc.getAddress()]);
const rateModel = await ethers.deployContract("InterestRateModel", [admin.address]);
const vault = await ethers.deployContract("StakingVault", [await usdc.getAddress(), await rateModel.getAddress(), admin.address]);
const loanBook = await ethers.deployContract("LoanBook", [await vault.getAddress(), admin.address]);
await vault.grantRole(await vault.LENDER_ROLE(), await loanBook.getAddress());
await loanBook.grantRole(await loanBook.OPERATOR_ROLE(), admin.address);

async function erc4626Ops(target: typeof plain | typeof vault) {
  const address = await target.getAddress();
  for (const who of [alice, bob]) await usdc.connect(who).approve(address, ethers.MaxUint256);
  await target.connect(bob).deposit(USDC(10_000), bob.address); // the first depositor
  const depositNew = await gasOf(target.connect(alice).deposit(USDC(1_000), alice.address));
  const depositExisting = await gasOf(target.connect(alice).deposit(USDC(1_000), alice.address));
  const shares = await target.balanceOf(alice.address);
  const redeemPart = await gasOf(target.connect(alice).redeem(shares / 2n, alice.address, alice.address));
  const redeemAll = await gasOf(target.connect(alice).redeem(await target.balanceOf(alice.address), alice.address, alice.address));
  return { depositNew, depositExisting, redeemPart, redeemAll };
}
const base = await erc4626Ops(plain);
const ours = await erc4626Ops(vault);

// --- loan book ---
const fund = await gasOf(loanBook.fundLoan(ethers.id("bench-loan-1"), borrower.address, USDC(100), USDC(3), USDC(10), 30));
await usdc.connect(borrower).approve(await loanBook.getAddress(), ethers.MaxUint256);
const repayPart = await gasOf(loanBook.connect(borrower).repay(1n, USDC(50)));
const repayFull = await gasOf(loanBook.connect(borrower).repay(1n, await loanBook.remainingBalance(1n)));

// --- social vault ---
const factory = await ethers.deployContract("SocialVaultFactory", [await usdc.getAddress()]);
const createVault = await gasOf(factory.connect(owner).createVault(USDC(100), HOUR, 2, ethers.id("bench-duress-key-commitment")));
const social = await ethers.getContractAt("SocialVault", await factory.vaultOf(owner.address));
await usdc.connect(owner).approve(await social.getAddress(), ethers.MaxUint256);
const socialDeposit = await gasOf(social.connect(owner).deposit(USDC(10_000)));
await social.connect(owner).addGuardian(guardian1.address);
await social.connect(owner).addGuardian(guardian2.address);
await networkHelpers.time.increase(HOUR);
const instantWithdraw = await gasOf(social.connect(owner).withdraw(USDC(50), recipient.address));

async function aboveLimitWithdrawal() {
  const id = await social.connect(owner).requestWithdrawal.staticCall(USDC(1_000), recipient.address);
  const request = await gasOf(social.connect(owner).requestWithdrawal(USDC(1_000), recipient.address));
  const approve1 = await gasOf(social.connect(guardian1).approveWithdrawal(id));
  const approve2 = await gasOf(social.connect(guardian2).approveWithdrawal(id));
  await networkHelpers.time.increase(HOUR);
  const execute = await gasOf(social.connect(owner).executeWithdrawal(id));
  return { request, approve1, approve2, execute, total: request + approve1 + approve2 + execute };
}
const firstWithdrawal = await aboveLimitWithdrawal();
const laterWithdrawal = await aboveLimitWithdrawal();

// The same withdrawal with the guardians' EIP-712 approvals batched into the execution.
const domain = {
  name: "TrustMint SocialVault",
  version: "1",
  chainId: (await ethers.provider.getNetwork()).chainId,
  verifyingContract: await social.getAddress(),
};
const approvalTypes = {
  ApproveWithdrawal: [
    { name: "id", type: "uint256" },
    { name: "recipient", type: "address" },
    { name: "amount", type: "uint256" },
  ],
};
const signedId = await social.connect(owner).requestWithdrawal.staticCall(USDC(1_000), recipient.address);
const signedRequest = await gasOf(social.connect(owner).requestWithdrawal(USDC(1_000), recipient.address));
const signatures = [];
for (const guardian of [guardian1, guardian2]) {
  const message = { id: signedId, recipient: recipient.address, amount: USDC(1_000) };
  signatures.push({ guardian: guardian.address, signature: await guardian.signTypedData(domain, approvalTypes, message) });
}
await networkHelpers.time.increase(HOUR);
const signedBatch = await gasOf(
  social.multicall([
    social.interface.encodeFunctionData("approveWithdrawalWithSignatures", [signedId, signatures]),
    social.interface.encodeFunctionData("executeWithdrawal", [signedId]),
  ]),
);

await social.connect(owner).requestWithdrawal(USDC(1_000), recipient.address); // an open request for lock to cancel
const lock = await gasOf(social.connect(owner).lock());

// --- report ---
const ratio = (a: bigint, b: bigint) => (Number(a) / Number(b)).toFixed(3);
const rows: [string, bigint, bigint | undefined][] = [
  ["vault deposit (new holder)", ours.depositNew, base.depositNew],
  ["vault deposit (existing holder)", ours.depositExisting, base.depositExisting],
  ["vault redeem (part)", ours.redeemPart, base.redeemPart],
  ["vault redeem (all)", ours.redeemAll, base.redeemAll],
  ["loan fund", fund, undefined],
  ["loan repay (partial)", repayPart, undefined],
  ["loan repay (full)", repayFull, undefined],
  ["social vault create", createVault, undefined],
  ["social vault deposit", socialDeposit, undefined],
  ["social vault instant withdraw", instantWithdraw, undefined],
  ["social vault request (first / later)", firstWithdrawal.request, laterWithdrawal.request],
  ["social vault approve (each)", firstWithdrawal.approve1, undefined],
  ["social vault execute", firstWithdrawal.execute, undefined],
  ["social vault lock (1 open request)", lock, undefined],
];
console.log(`${"operation".padEnd(40)} ${"gas".padStart(9)} ${"baseline".padStart(9)} ratio`);
for (const [name, gas, baseline] of rows) {
  const isPair = name.includes("first / later");
  console.log(
    `${name.padEnd(40)} ${gas.toString().padStart(9)} ${(baseline?.toString() ?? "").padStart(9)} ${baseline && !isPair ? ratio(gas, baseline) : ""}`,
  );
}
console.log("");
console.log("above-limit social-vault withdrawal, 2 guardian approvals, request to execute:");
console.log(
  `  4 transactions, first request of a vault  ${firstWithdrawal.total}  vs Safe 2-of-3 + Delay ${SAFE_WITH_DELAY_GAS}: ${ratio(firstWithdrawal.total, SAFE_WITH_DELAY_GAS)}`,
);
console.log(
  `  4 transactions, later request             ${laterWithdrawal.total}  ratio ${ratio(laterWithdrawal.total, SAFE_WITH_DELAY_GAS)}`,
);
console.log(
  `  request + signed approvals batched with execute  ${signedRequest + signedBatch}  ratio ${ratio(signedRequest + signedBatch, SAFE_WITH_DELAY_GAS)}`,
);
const worst = [ours.depositNew, ours.depositExisting, ours.redeemPart, ours.redeemAll]
  .map((gas, index) => Number(gas) / Number([base.depositNew, base.depositExisting, base.redeemPart, base.redeemAll][index]))
  .reduce((a, b) => Math.max(a, b));
console.log(`ratio: ${worst.toFixed(3)}`);
