// The loan book under ERC-2771 forwarding and EIP-2612 permits: a borrower's managed wallet without ETH repays with
// one signed request; the loan book names the wallet as the payer and pulls from it, as on a direct call.
import { expect } from "chai";
import type { ContractTransactionResponse } from "ethers";
import { network } from "hardhat";
import { deployPlatform, forwarderAccount, inSeconds, signPermit, signRequest } from "../metatx/metatx-helpers.js";
import { USDC } from "./lending-fixture.js";

const { ethers, networkHelpers } = await network.create();

/**
 * The platform with 10,000 USDC deposited by Alice, loan 1 to the managed wallet `user` and loan 2 to the Hardhat
 * account `borrower` (each 300 USDC, 30 USDC interest, 30 USDC fee, 30 days), and `carol`, a Hardhat account with
 * 10,000 USDC that has approved nothing.
 */
async function withLoans() {
  const f = await deployPlatform(ethers);
  const carol = (await ethers.getSigners())[10]!;
  await f.usdc.mint(carol.address, USDC(10_000));
  await f.vault.connect(f.alice).deposit(USDC(10_000), f.alice.address);
  await f.book.connect(f.operator).fundLoan(ethers.id("loan-user"), f.user.address, USDC(300), USDC(30), USDC(30), 30);
  await f.book.connect(f.operator).fundLoan(ethers.id("loan-borrower"), f.borrower.address, USDC(300), USDC(30), USDC(30), 30);
  return { ...f, carol };
}
const load = () => networkHelpers.loadFixture(withLoans);
type Fixture = Awaited<ReturnType<typeof withLoans>>;

/** Closing a loan in its first week: principal plus 7 of 30 days' interest. */
const PAYOFF = USDC(300) + USDC(7);

async function logsOf(tx: Promise<ContractTransactionResponse>, addresses: string[]) {
  const receipt = await (await tx).wait();
  return receipt!.logs
    .filter((log) => addresses.includes(log.address))
    .map((log) => ({ address: log.address, topics: log.topics, data: log.data }));
}

/** `signer` repays `amount` on `loanId` with a permit, through the forwarder, relayed by the relayer. */
async function forwardedRepayWithPermit(f: Fixture, signer: Fixture["user"] | Fixture["borrower"], loanId: bigint, amount: bigint) {
  const { deadline, v, r, s } = await signPermit(f.usdc, signer, f.book, amount);
  const data = f.book.interface.encodeFunctionData("repayWithPermit", [loanId, amount, deadline, v, r, s]);
  return f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, signer, f.book, data));
}

describe("LoanBook meta-transactions", () => {
  describe("repayWithPermit", () => {
    it("repays on a direct call with a permit and no prior allowance, and emits LoanRepaymentMade", async () => {
      const { usdc, book, vault, user, carol } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, book, USDC(100));
      await expect(book.connect(carol).repayWithPermit(1n, USDC(100), deadline, v, r, s))
        .to.emit(book, "LoanRepaymentMade")
        .withArgs(1n, user.address, carol.address, USDC(100), USDC(7), USDC(93), USDC(230), USDC(100), false)
        .and.to.emit(usdc, "Transfer")
        .withArgs(carol.address, await vault.getAddress(), USDC(100));
      expect(await usdc.allowance(carol.address, await book.getAddress())).to.equal(0n);
    });

    it("lets a borrower without ETH repay through the forwarder: the wallet is the payer", async () => {
      const f = await load();
      const before = await f.usdc.balanceOf(f.user.address);
      await expect(forwardedRepayWithPermit(f, f.user, 1n, USDC(50)))
        .to.emit(f.book, "LoanRepaymentMade")
        .withArgs(1n, f.user.address, f.user.address, USDC(50), USDC(7), USDC(43), USDC(280), USDC(50), false)
        .and.to.emit(f.vault, "StakingVaultRepaymentRecorded")
        .withArgs(1n, USDC(43), USDC(7), 0n, USDC(300 + 300 - 43));
      expect(await f.usdc.balanceOf(f.user.address)).to.equal(before - USDC(50));
      expect(await ethers.provider.getBalance(f.user.address)).to.equal(0n);
    });

    it("emits exactly the events of a direct repay when forwarded", async () => {
      const f = await load();
      const watched = [await f.book.getAddress(), await f.vault.getAddress()];
      const direct = await logsOf(f.book.connect(f.borrower).repay(2n, USDC(120)), watched);

      const again = await load(); // the same state, before the direct repayment
      const forwarded = await logsOf(forwardedRepayWithPermit(again, again.borrower, 2n, USDC(120)), watched);

      expect(direct).to.have.length(2); // LoanRepaymentMade and StakingVaultRepaymentRecorded: a payment on schedule locks nothing
      expect(forwarded).to.deep.equal(direct);
    });

    it("pulls only the payoff when the amount is above it, and closes the loan", async () => {
      const f = await load();
      const amount = await f.book.remainingBalance(1n);
      await expect(forwardedRepayWithPermit(f, f.user, 1n, amount))
        .to.emit(f.book, "LoanRepaymentMade")
        .withArgs(1n, f.user.address, f.user.address, PAYOFF, USDC(7), USDC(300), 0n, PAYOFF, true);
      expect((await f.book.getLoan(1n)).status).to.equal(3n); // Repaid
      // The rest of the permit stays as an allowance only the user's own repayments can use.
      expect(await f.usdc.allowance(f.user.address, await f.book.getAddress())).to.equal(amount - PAYOFF);
    });

    it("still repays when someone submitted the permit first (front-running)", async () => {
      const f = await load();
      const { deadline, v, r, s } = await signPermit(f.usdc, f.user, f.book, USDC(60));
      await f.usdc.connect(f.stranger).permit(f.user.address, await f.book.getAddress(), USDC(60), deadline, v, r, s);
      const data = f.book.interface.encodeFunctionData("repayWithPermit", [1n, USDC(60), deadline, v, r, s]);
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.user, f.book, data)))
        .to.emit(f.book, "LoanRepaymentMade")
        .withArgs(1n, f.user.address, f.user.address, USDC(60), USDC(7), USDC(53), USDC(270), USDC(60), false);
    });

    it("reverts when the permit is someone else's: it serves only its signer, and the caller has no allowance", async () => {
      const { usdc, book, user, carol } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, user, book, USDC(100));
      await expect(book.connect(carol).repayWithPermit(1n, USDC(100), deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await book.getAddress(), 0n, USDC(100));
      expect(await usdc.nonces(user.address)).to.equal(0n);
    });

    it("reverts when the permit has expired and there is no allowance", async () => {
      const { usdc, book, carol } = await load();
      const { deadline, v, r, s } = await signPermit(usdc, carol, book, USDC(100), { deadline: await inSeconds(ethers, -1) });
      await expect(book.connect(carol).repayWithPermit(1n, USDC(100), deadline, v, r, s))
        .to.be.revertedWithCustomError(usdc, "ERC20InsufficientAllowance")
        .withArgs(await book.getAddress(), 0n, USDC(100));
    });

    it("reverts like repay for an unknown loan, a closed loan or a zero amount", async () => {
      const { usdc, book, carol } = await load();
      const permit = await signPermit(usdc, carol, book, USDC(400));
      const { deadline, v, r, s } = permit;
      await expect(book.connect(carol).repayWithPermit(99n, USDC(400), deadline, v, r, s))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotFound")
        .withArgs(99n);
      await expect(book.connect(carol).repayWithPermit(1n, 0n, deadline, v, r, s))
        .to.be.revertedWithCustomError(book, "LoanBookZeroRepayment")
        .withArgs(1n);
      await book.connect(carol).repayWithPermit(1n, USDC(400), deadline, v, r, s);
      await expect(book.connect(carol).repayWithPermit(1n, USDC(400), deadline, v, r, s))
        .to.be.revertedWithCustomError(book, "LoanBookLoanNotOpen")
        .withArgs(1n, 3n);
    });
  });

  describe("forwarded calls", () => {
    it("repay after a relayed permit acts for the signer", async () => {
      const f = await load();
      // The relayer submits the user's permit to USDC itself, then the user's forwarded plain repay.
      const { deadline, v, r, s } = await signPermit(f.usdc, f.user, f.book, USDC(20));
      await f.usdc.connect(f.relayer).permit(f.user.address, await f.book.getAddress(), USDC(20), deadline, v, r, s);
      const data = f.book.interface.encodeFunctionData("repay", [1n, USDC(20)]);
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.user, f.book, data)))
        .to.emit(f.book, "LoanRepaymentMade")
        .withArgs(1n, f.user.address, f.user.address, USDC(20), USDC(7), USDC(13), USDC(310), USDC(20), false);
    });

    it("checks the operator role against the signer", async () => {
      const f = await load();
      const data = f.book.interface.encodeFunctionData("fundLoan", [ethers.id("loan-x"), f.user.address, USDC(100), 0n, 0n, 30]);
      const asForwarder = await forwarderAccount(ethers, networkHelpers, f.forwarder);
      await expect(asForwarder.call(f.book, data, f.user.address))
        .to.be.revertedWithCustomError(f.book, "AccessControlUnauthorizedAccount")
        .withArgs(f.user.address, await f.book.OPERATOR_ROLE());
      // The operator's signature through the forwarder works, as do its direct calls (the fixture).
      await expect(f.forwarder.connect(f.relayer).execute(await signRequest(f.forwarder, f.operator, f.book, data))).to.emit(
        f.book,
        "LoanFunded",
      );
    });
  });
});
