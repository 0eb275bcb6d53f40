// `npm run bench:gas`: gas of every user operation on the platform contracts, beside a plain
// OpenZeppelin ERC-4626 vault measured in the same run and state (the baseline), and one
// above-limit social-vault withdrawal with two guardian approvals beside a Safe 2-of-3 with a
// Zodiac Delay queue (153,022 gas measured on this machine for enqueue plus execute), and the cost
// of the gasless path: a managed wallet's request signed for the ERC-2771 forwarder and relayed,
// beside the same operation sent directly by a wallet that pays its own gas, and the same requests
// relayed in batches of 1, 10 and 50 with `executeBatch` (scripts/bench/gas-relay.ts), and a wallet the user holds
// (self-custody, D-119) beside a managed one on the service's path: each write's relayed request alone, then with the
// permit it needs, and a checkout's direct pay by one EIP-3009 authorization (D-120).
// Last line: `ratio: <worst of deposit and redeem, ours / plain>`.
import { type BaseContract, Signature, type Wallet } from "ethers";
import { network } from "hardhat";
import { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN, PERMIT_TYPES, RECEIVE_WITH_AUTHORIZATION_TYPES } from "../core/eip712.js";
import { benchRelayedBatches } from "./bench/gas-relay.js";

const SAFE_WITH_DELAY_GAS = 153_022n;
const USDC = (amount: number) => BigInt(amount) * 1_000_000n;
const HOUR = 3600;

const { ethers, networkHelpers } = await network.create();
const [admin, alice, bob, borrower, owner, guardian1, guardian2, recipient] = await ethers.getSigners();

type Sent = Promise<{ wait(): Promise<{ gasUsed: bigint } | null> }>;
const gasOf = async (tx: Sent) => (await (await tx).wait())!.gasUsed;

const usdc = await ethers.deployContract("MockUSDC", [admin.address]);
for (const who of [alice, bob, borrower, owner, recipient]) await usdc.mint(who.address, USDC(1_000_000));
const forwarder = await ethers.deployContract("TrustMintForwarder");
const forwarderAddress = await forwarder.getAddress();

// --- staking vault vs plain ERC-4626, same state: a first depositor already in both ---
const plain = await ethers.deployContract("PlainERC4626", [await usdc.getAddress()]);
const rateModel = await ethers.deployContract("InterestRateModel", [admin.address]);
const vault = await ethers.deployContract("StakingVault", [
  await usdc.getAddress(),
  await rateModel.getAddress(),
  admin.address,
  forwarderAddress,
]);
const loanBook = await ethers.deployContract("LoanBook", [await vault.getAddress(), admin.address, forwarderAddress]);
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
const factory = await ethers.deployContract("SocialVaultFactory", [await usdc.getAddress(), forwarderAddress]);
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

// --- gasless path: forwarded requests of a managed wallet vs the same calls sent directly ---
// `direct` is a Hardhat account paying its own gas, after an exact `approve` (its own transaction, counted only in
// the "2 txs" rows);
// `managed` never holds ETH: it signs a ForwardRequest (and an EIP-2612 permit where USDC is pulled) and the
// relayer sends `forwarder.execute`. Both start in the same state: same amounts, both new holders at first.
const chainId = (await ethers.provider.getNetwork()).chainId;
const [, , , , , , , , direct, relayer] = await ethers.getSigners();
const managed: Wallet = new ethers.Wallet(ethers.id("bench managed wallet"), ethers.provider);
for (const who of [direct.address, managed.address]) await usdc.mint(who, USDC(100_000));

async function forwarded(signer: Wallet, target: BaseContract, data: string) {
  const message = {
    from: signer.address,
    to: await target.getAddress(),
    value: 0n,
    gas: 500_000n,
    nonce: await forwarder.nonces(signer.address),
    deadline: BigInt((await networkHelpers.time.latest()) + HOUR),
    data,
  };
  const domain = { ...FORWARDER_DOMAIN, chainId, verifyingContract: forwarderAddress };
  const signature = await signer.signTypedData(domain, FORWARD_REQUEST_TYPES, message);
  return gasOf(forwarder.connect(relayer).execute({ ...message, signature }));
}

async function permit(signer: Wallet, spender: BaseContract, value: bigint) {
  const deadline = BigInt((await networkHelpers.time.latest()) + HOUR);
  const domain = { name: await usdc.name(), version: await usdc.version(), chainId, verifyingContract: await usdc.getAddress() };
  const message = { owner: signer.address, spender: await spender.getAddress(), value, nonce: await usdc.nonces(signer.address), deadline };
  const { v, r, s } = Signature.from(await signer.signTypedData(domain, PERMIT_TYPES, message));
  return { deadline, v, r, s };
}

let lastApprove = 0n; // the gas of the direct wallet's latest approve transaction
async function directDeposit(amount: bigint) {
  lastApprove = await gasOf(usdc.connect(direct).approve(await vault.getAddress(), amount));
  return gasOf(vault.connect(direct).deposit(amount, direct.address));
}
async function forwardedDepositWithPermit(amount: bigint) {
  const p = await permit(managed, vault, amount);
  return forwarded(
    managed,
    vault,
    vault.interface.encodeFunctionData("depositWithPermit", [amount, managed.address, p.deadline, p.v, p.r, p.s]),
  );
}

const gasless: [string, bigint, bigint][] = [];
gasless.push([
  "deposit / depositWithPermit, first of a wallet",
  await directDeposit(USDC(1_000)),
  await forwardedDepositWithPermit(USDC(1_000)),
]);
{
  const directGas = await directDeposit(USDC(1_000));
  const forwardedGas = await forwardedDepositWithPermit(USDC(1_000));
  gasless.push(["deposit / depositWithPermit, later", directGas, forwardedGas]);
  gasless.push(["approve + deposit (2 txs) / depositWithPermit", lastApprove + directGas, forwardedGas]);
}
{
  // The same deposit call forwarded, with the allowance already in place (set by a relayed permit, not counted).
  const p = await permit(managed, vault, USDC(1_000));
  await usdc.connect(relayer).permit(managed.address, await vault.getAddress(), USDC(1_000), p.deadline, p.v, p.r, p.s);
  const deposit = (who: string) => vault.interface.encodeFunctionData("deposit", [USDC(1_000), who]);
  gasless.push([
    "deposit / deposit (allowance set)",
    await directDeposit(USDC(1_000)),
    await forwarded(managed, vault, deposit(managed.address)),
  ]);
}
{
  const shares = (await vault.balanceOf(direct.address)) / 4n;
  const directRedeem = await gasOf(vault.connect(direct).redeem(shares, direct.address, direct.address));
  const redeem = vault.interface.encodeFunctionData("redeem", [shares, managed.address, managed.address]);
  gasless.push(["redeem (part)", directRedeem, await forwarded(managed, vault, redeem)]);
}
{
  // Two identical loans, one per wallet; each repays in two parts.
  await loanBook.fundLoan(ethers.id("bench-loan-direct"), direct.address, USDC(100), USDC(3), USDC(10), 30);
  const directLoan = await loanBook.loanCount();
  await loanBook.fundLoan(ethers.id("bench-loan-managed"), managed.address, USDC(100), USDC(3), USDC(10), 30);
  const managedLoan = await loanBook.loanCount();
  const directRepay = async (amount: bigint) => {
    lastApprove = await gasOf(usdc.connect(direct).approve(await loanBook.getAddress(), amount));
    return gasOf(loanBook.connect(direct).repay(directLoan, amount));
  };
  const p = await permit(managed, loanBook, USDC(40));
  const withPermit = loanBook.interface.encodeFunctionData("repayWithPermit", [managedLoan, USDC(40), p.deadline, p.v, p.r, p.s]);
  const directGas = await directRepay(USDC(40));
  const forwardedGas = await forwarded(managed, loanBook, withPermit);
  gasless.push(["repay / repayWithPermit (partial)", directGas, forwardedGas]);
  gasless.push(["approve + repay (2 txs) / repayWithPermit", lastApprove + directGas, forwardedGas]);
  const rest = await loanBook.remainingBalance(managedLoan);
  const q = await permit(managed, loanBook, rest);
  await usdc.connect(relayer).permit(managed.address, await loanBook.getAddress(), rest, q.deadline, q.v, q.r, q.s);
  const repay = loanBook.interface.encodeFunctionData("repay", [managedLoan, rest]);
  gasless.push([
    "repay / repay (allowance set, full)",
    await directRepay(await loanBook.remainingBalance(directLoan)),
    await forwarded(managed, loanBook, repay),
  ]);
}

// --- self-custody vs managed (D-119): the same writes through the service's path, one request each ---
// A managed wallet pulls under its standing allowance (one permit of 2^256-1, granted once: not counted); a wallet the
// user holds signs a permit for exactly the amount of each write that pulls USDC, which the relayer submits as a
// transaction of its own before the request. Both wallets are holders already and have used the forwarder.
const custody: [string, bigint, bigint][] = [];
{
  const own: Wallet = new ethers.Wallet(ethers.id("bench self-custody wallet"), ethers.provider);
  const held: Wallet = new ethers.Wallet(ethers.id("bench managed steady wallet"), ethers.provider);
  for (const who of [own.address, held.address]) await usdc.mint(who, USDC(100_000));
  const applyPermit = async (wallet: Wallet, spender: BaseContract, value: bigint) => {
    const p = await permit(wallet, spender, value);
    return gasOf(usdc.connect(relayer).permit(wallet.address, await spender.getAddress(), value, p.deadline, p.v, p.r, p.s));
  };
  for (const spender of [vault, loanBook]) await applyPermit(held, spender, ethers.MaxUint256);
  const deposit = (who: string) => vault.interface.encodeFunctionData("deposit", [USDC(1_000), who]);
  await forwarded(held, vault, deposit(held.address));
  await applyPermit(own, vault, USDC(1_000));
  await forwarded(own, vault, deposit(own.address));
  custody.push([
    "deposit (a permit + the request / the request)",
    await forwarded(held, vault, deposit(held.address)),
    (await applyPermit(own, vault, USDC(1_000))) + (await forwarded(own, vault, deposit(own.address))),
  ]);
  const redeem = async (wallet: Wallet) => {
    const shares = (await vault.balanceOf(wallet.address)) / 4n;
    return forwarded(wallet, vault, vault.interface.encodeFunctionData("redeem", [shares, wallet.address, wallet.address]));
  };
  custody.push(["redeem (part: no permit)", await redeem(held), await redeem(own)]);
  const loans = new Map<string, bigint>();
  for (const wallet of [held, own]) {
    await loanBook.fundLoan(ethers.id(`bench-custody-loan-${wallet.address}`), wallet.address, USDC(100), USDC(3), USDC(10), 30);
    loans.set(wallet.address, await loanBook.loanCount());
  }
  const repay = (wallet: Wallet) => loanBook.interface.encodeFunctionData("repay", [loans.get(wallet.address)!, USDC(40)]);
  custody.push([
    "repay (partial: a permit + the request / the request)",
    await forwarded(held, loanBook, repay(held)),
    (await applyPermit(own, loanBook, USDC(40))) + (await forwarded(own, loanBook, repay(own))),
  ]);
  // The relayed request alone, the allowance in place for both (the permit's own transaction not counted).
  await applyPermit(own, vault, USDC(1_000));
  custody.push([
    "deposit, the request alone (both allowed)",
    await forwarded(held, vault, deposit(held.address)),
    await forwarded(own, vault, deposit(own.address)),
  ]);
  await applyPermit(own, loanBook, USDC(10));
  const repayTen = (wallet: Wallet) => loanBook.interface.encodeFunctionData("repay", [loans.get(wallet.address)!, USDC(10)]);
  custody.push([
    "repay, the request alone (both allowed)",
    await forwarded(held, loanBook, repayTen(held)),
    await forwarded(own, loanBook, repayTen(own)),
  ]);

  // A checkout's direct pay: the managed wallet's forwarded `pay` under its standing allowance; the user's wallet signs
  // one ReceiveWithAuthorization, which the relayer sends in `payWithAuthorization` (no forwarder, no permit). One
  // payment paid first, so the merchant and the treasury hold USDC already in both.
  const router = await ethers.deployContract("PaymentRouter", [
    await usdc.getAddress(),
    await loanBook.getAddress(),
    admin.address,
    recipient.address,
    forwarderAddress,
  ]);
  const merchant = alice.address;
  await applyPermit(held, router, ethers.MaxUint256);
  const pay = (ref: string) => router.interface.encodeFunctionData("pay", [ethers.id(ref), merchant, USDC(25)]);
  await forwarded(held, router, pay("bench-order-0"));
  const authorized = async (ref: string) => {
    const nonce = await router.paymentKey(ethers.id(ref), merchant, USDC(25));
    const domain = { name: await usdc.name(), version: await usdc.version(), chainId, verifyingContract: await usdc.getAddress() };
    const validBefore = BigInt((await networkHelpers.time.latest()) + HOUR);
    const message = { from: own.address, to: await router.getAddress(), value: USDC(25), validAfter: 0n, validBefore, nonce };
    const { v, r, s } = Signature.from(await own.signTypedData(domain, RECEIVE_WITH_AUTHORIZATION_TYPES, message));
    return gasOf(router.connect(relayer).payWithAuthorization(ethers.id(ref), merchant, USDC(25), own.address, 0n, validBefore, v, r, s));
  };
  custody.push([
    "checkout pay (one authorization / the request)",
    await forwarded(held, router, pay("bench-order-1")),
    await authorized("bench-order-2"),
  ]);
  // The path it replaced for a wallet the user holds: an exact permit, then the forwarded request.
  const permitAndRequest = (await applyPermit(own, router, USDC(25))) + (await forwarded(own, router, pay("bench-order-3")));
  custody.push([
    "checkout pay (a permit + the request / the request)",
    await forwarded(held, router, pay("bench-order-4")),
    permitAndRequest,
  ]);
}

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
console.log("");
console.log("gasless path: direct call (the wallet pays) vs the managed wallet's request relayed through the forwarder:");
console.log(`${"operation (direct / forwarded)".padEnd(48)} ${"direct".padStart(8)} ${"forwarded".padStart(10)} ${"overhead".padStart(9)}`);
for (const [name, directGas, forwardedGas] of gasless) {
  const overhead = forwardedGas - directGas;
  const sign = overhead >= 0n ? "+" : "";
  const percent = `${sign}${((Number(overhead) / Number(directGas)) * 100).toFixed(1)} %`;
  console.log(
    `${name.padEnd(48)} ${directGas.toString().padStart(8)} ${forwardedGas.toString().padStart(10)} ${`${sign}${overhead}`.padStart(9)}  ${percent}`,
  );
}
console.log("");
console.log(
  "self-custody (the user's wallet signs; a permit of the exact amount per pulling write, or one authorization) vs managed (standing allowance):",
);
console.log(`${"operation".padEnd(54)} ${"managed".padStart(8)} ${"self".padStart(8)} ratio`);
for (const [name, managedGas, ownGas] of custody) {
  console.log(`${name.padEnd(54)} ${managedGas.toString().padStart(8)} ${ownGas.toString().padStart(8)} ${ratio(ownGas, managedGas)}`);
}
await benchRelayedBatches({
  connection: { ethers, networkHelpers },
  addresses: {
    usdc: await usdc.getAddress(),
    vault: await vault.getAddress(),
    loanBook: await loanBook.getAddress(),
    forwarder: forwarderAddress,
  },
  admin,
  relayer,
  direct: (await ethers.getSigners())[10]!,
});
console.log(`ratio: ${worst.toFixed(3)}`);
