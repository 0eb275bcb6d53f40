import { type Contract, ethers, type JsonRpcSigner } from "ethers";
import { refFromLoanId } from "../../domain/loans/ids.js";
import { type TestChain, usdc } from "./chain.js";

const SOCIAL_VAULT: [string, string] = ["social/SocialVault.sol", "SocialVault"];

/** Sends a transaction, waits for its receipt and returns its hash. */
async function send(call: Promise<{ hash: string; wait(): Promise<unknown> }>): Promise<string> {
  const tx = await call;
  await tx.wait();
  return tx.hash;
}

const fn = (contract: Contract, runner: JsonRpcSigner, name: string) => (contract.connect(runner) as Contract).getFunction(name);

async function fund(chain: TestChain, to: string, amount: bigint) {
  await send(chain.contracts.usdc.getFunction("mint")(to, amount));
}

/** Deposits into the staking vault from `signer`, a wallet calling the contract directly (minting the USDC first); returns the deposit's tx hash. */
export async function deposit(chain: TestChain, signer: JsonRpcSigner, amount: bigint): Promise<string> {
  const address = await signer.getAddress();
  await fund(chain, address, amount);
  await send(fn(chain.contracts.usdc, signer, "approve")(await chain.contracts.vault.getAddress(), amount));
  return send(fn(chain.contracts.vault, signer, "deposit")(amount, address));
}

export async function redeem(chain: TestChain, signer: JsonRpcSigner, shares: bigint) {
  const address = await signer.getAddress();
  await send(fn(chain.contracts.vault, signer, "redeem")(shares, address, address));
}

export async function distributeYield(chain: TestChain, amount: bigint) {
  const deployer = await chain.signer(0);
  await fund(chain, await deployer.getAddress(), amount);
  await send(fn(chain.contracts.usdc, deployer, "approve")(await chain.contracts.vault.getAddress(), amount));
  await send(fn(chain.contracts.vault, deployer, "distributeYield")(amount));
}

/** Funds a loan (the deployer is the operator) and returns its on-chain id. */
export async function fundLoan(chain: TestChain, borrower: JsonRpcSigner, loanUuid: string, principal: bigint, interest: bigint) {
  const deployer = await chain.signer(0);
  await send(
    fn(chain.contracts.loanBook, deployer, "fundLoan")(
      refFromLoanId(loanUuid),
      await borrower.getAddress(),
      principal,
      interest,
      principal / 100n,
      30,
    ),
  );
  return (await chain.contracts.loanBook.getFunction("loanCount")()) as bigint;
}

export async function repay(chain: TestChain, borrower: JsonRpcSigner, loanId: bigint, amount: bigint) {
  await fund(chain, await borrower.getAddress(), amount);
  await send(fn(chain.contracts.usdc, borrower, "approve")(await chain.contracts.loanBook.getAddress(), amount));
  await send(fn(chain.contracts.loanBook, borrower, "repay")(loanId, amount));
}

/** Creates `owner`'s social vault, funds it, adds a guardian and opens a withdrawal above the daily limit. */
export async function socialVaultActivity(chain: TestChain, owner: JsonRpcSigner, guardian: string) {
  const ownerAddress = await owner.getAddress();
  await send(fn(chain.contracts.factory, owner, "createVault")(usdc(100), 3_600, 1, ethers.id("1234")));
  const vaultAddress = (await chain.contracts.factory.getFunction("vaultOf")(ownerAddress)) as string;
  const vault = chain.at(SOCIAL_VAULT, vaultAddress, owner);
  await fund(chain, ownerAddress, usdc(1_000));
  await send(fn(chain.contracts.usdc, owner, "approve")(vaultAddress, usdc(1_000)));
  await send(vault.getFunction("deposit")(usdc(1_000)));
  await send(vault.getFunction("withdraw")(usdc(40), ownerAddress));
  await send(vault.getFunction("addGuardian")(guardian));
  await send(vault.getFunction("requestWithdrawal")(usdc(500), ownerAddress));
  return vaultAddress;
}

export async function lockSocialVault(chain: TestChain, owner: JsonRpcSigner, vaultAddress: string) {
  await send(chain.at(SOCIAL_VAULT, vaultAddress, owner).getFunction("lock")());
}

/** Something of every kind: deposits, a redemption, yield, a loan with a partial and a full repayment, a social vault. */
export async function everyKindOfActivity(
  chain: TestChain,
  signers: { depositor: number; borrower: number; vaultOwner: number; guardian: number },
) {
  const depositor = await chain.signer(signers.depositor);
  const borrower = await chain.signer(signers.borrower);
  const owner = await chain.signer(signers.vaultOwner);
  const guardian = await (await chain.signer(signers.guardian)).getAddress();
  await deposit(chain, depositor, usdc(10_000));
  await redeem(chain, depositor, usdc(1_000) * 10n ** 12n);
  await distributeYield(chain, usdc(50));
  const loanId = await fundLoan(chain, borrower, crypto.randomUUID(), usdc(500), usdc(25));
  await repay(chain, borrower, loanId, usdc(100));
  await repay(chain, borrower, loanId, usdc(425));
  const vault = await socialVaultActivity(chain, owner, guardian);
  await lockSocialVault(chain, owner, vault);
  return { loanId, vault };
}
