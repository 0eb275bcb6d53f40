// Merchants' payments, the payer's side (D-81): what the hosted checkout shows of a payment, the
// signed-in payer's terms of each method, and the payment itself (the sandbox's test mode aside):
// direct (the payer's own transaction through the router), or on credit and in installments (the
// router's payWithLoans, sent by the service: the pool lends, the payer owes). A payment is held
// for one attempt at a time and the router pays it at most once; every attempt ends (D-89).
import { AbiCoder, type Contract, getAddress, keccak256 } from "ethers";
import type { Clock } from "../../core/clock.js";
import { usdcNumber } from "../../core/money.js";
import { refFromUuid } from "../../core/refs.js";
import { isUuid } from "../../core/text.js";
import type { Db } from "../db.js";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import type { LoanFinancing } from "../loans/financing.js";
import { rateBpsOf } from "../loans/terms.js";
import { chainFailure, TransactionRefusedError, TransactionRevertedError } from "../transactions/failures.js";
import type { MirrorWait } from "../transactions/read-your-writes.js";
import type { TransactionSender } from "../transactions/sender.js";
import type { UserWrite } from "../transactions/user-write.js";
import type { UserRecord } from "../users/repo.js";
import { attemptKeyOf, FINANCE_PURPOSE, type PaymentAttempts } from "./attempts.js";
import type { PaymentEvents } from "./events.js";
import { type FinancingPlan, type Frequency, financedRevert, loanCountOf, type PayerTerms, planOf, splitSchedule } from "./financing.js";
import type { PaymentRow, PaymentsRepo } from "./repo.js";
import {
  DECLINING_ADDRESS,
  FEE_BPS,
  feeOf,
  INSUFFICIENT_FUNDS_ADDRESS,
  type PaymentMethod,
  payRefusal,
  requirePayment,
  withPaymentId,
} from "./rules.js";

/** A merchant paying itself moves money in a circle: no purchase, and no credit to earn from it (D-88). */
function refuseSelfPayment(payer: UserRecord, row: PaymentRow, payerAddress: string) {
  if (payer.id === row.merchantId || payer.walletAddress.toLowerCase() === row.merchantWallet || payerAddress === row.merchantWallet) {
    throw new AppError("SELF_PAYMENT", "A merchant cannot pay its own payment", { field: "payer", reason: "the payment's merchant" });
  }
}

export interface CheckoutDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  repo: PaymentsRepo;
  /** The PaymentRouter (a direct payment goes through `userWrite`, one on credit through `sender`). */
  router: Contract;
  userWrite: UserWrite;
  /** Turns mirrored facts into the merchant's events; run after a payment so its event exists when it answers. */
  events: Pick<PaymentEvents, "take" | "consumer">;
  /** The payer's loans of a payment on credit or in installments (the loans domain's rules). */
  financing: Pick<LoanFinancing, "eligibility" | "reserve" | "settle">;
  /** The service's own sender: the router's OPERATOR_ROLE pays a payment on credit. */
  sender: Pick<TransactionSender, "send">;
  /** How an attempt fails: said to the merchant, its loans cancelled, in one transaction. */
  attempts: Pick<PaymentAttempts, "fail">;
  mirror: Pick<MirrorWait, "untilIndexed">;
  /**
   * The lending pool: the USDC it could lend now (the staking vault's idle assets), and the least
   * interest the loan book takes on a purchase loan of `principal` to `borrower` (its provision, D-127).
   */
  pool: { lendableAssets(): Promise<bigint>; minInterestOf(borrower: string, principal: bigint): Promise<bigint> };
  production: boolean;
}

export function createCheckout(deps: CheckoutDeps) {
  const { repo, router } = deps;
  const routerAddress = router.target as string;

  const anyPayment = async (id: string) => requirePayment(isUuid(id) ? await repo.find(id, deps.clock.now()) : null);

  /** The payer's plan for a payment on credit or in installments, at their tier now; NOT_ELIGIBLE otherwise. */
  async function planFor(payer: UserRecord, row: PaymentRow, method: "credit" | "split"): Promise<FinancingPlan> {
    const count = loanCountOf(method, row.splitOptions as { installments?: number } | null);
    const tier = await deps.financing.eligibility(payer, count);
    const plan = await planOf(
      method,
      row.amount,
      FEE_BPS[method],
      tier,
      {
        creditOptions: row.creditOptions as { maxDuration?: number; maxInterest?: number } | null,
        splitOptions: row.splitOptions as { installments?: number; frequency?: Frequency } | null,
      },
      (principal) => deps.pool.minInterestOf(payer.walletAddress, principal),
    );
    // The credit the loans take (their principals, D-127), within the tier's and the pool's limits.
    await deps.financing.eligibility(
      payer,
      count,
      plan.loans.reduce((sum, loan) => sum + loan.principal, 0n),
    );
    return plan;
  }

  /**
   * The payment as the mirror has it, where the payer's own signed authorization paid it although
   * the service's transaction did not (D-120): anyone may submit the authorization, and one who
   * saw it first did. The chain's record names the payer; null where it names no one or another.
   */
  async function paidByPayerMeanwhile(row: PaymentRow, wallet: string): Promise<PaymentRow | null> {
    const onChain = (await router.paymentOf(refFromUuid(row.id), getAddress(row.merchantWallet), row.amount)) as { payer: string };
    if (onChain.payer.toLowerCase() !== wallet) return null;
    await deps.mirror.untilIndexed(await router.runner!.provider!.getBlockNumber());
    const after = await repo.find(row.id, deps.clock.now());
    return after?.paidTxHash ? after : null;
  }

  /**
   * Pays a payment on credit or in installments: the payer's plan at their tier, then, in one
   * transaction, the payment's hold and the plan's loans (eligibility checked again under the
   * payer's row lock, so the cap of open loans holds), then the router's `payWithLoans` sent by
   * the service (the pool lends, the merchant is paid, each fee stays in the pool's insurance reserve, the payer owes).
   */
  async function payFinanced(payer: UserRecord, row: PaymentRow, method: "credit" | "split") {
    let plan: FinancingPlan;
    try {
      plan = await planFor(payer, row, method);
    } catch (error) {
      if (error instanceof AppError && error.code === "NOT_ELIGIBLE") await deps.attempts.fail(row, method, "not_eligible", false);
      throw error;
    }
    const wallet = payer.walletAddress.toLowerCase();
    const held = await deps.db.prisma
      .$transaction(async (tx) => {
        if (!(await repo.claim(row.id, { method, payerId: payer.id, payerAddress: wallet }, deps.clock.now(), tx))) return false;
        const purpose = `Payment to ${row.merchantName}${row.description ? `: ${row.description}` : ""}`.slice(0, 200);
        await deps.financing.reserve(tx, payer, { paymentId: row.id, installments: plan.loans, purpose, rateBps: plan.rateBps });
        return true;
      })
      .catch(async (error: unknown) => {
        if (error instanceof AppError && error.code === "NOT_ELIGIBLE") await deps.attempts.fail(row, method, "not_eligible", false);
        throw error;
      });
    if (!held) throw payRefusal(await anyPayment(row.id)) ?? new AppError("PAYMENT_IN_PROGRESS", "Try again in a moment", undefined, 5);
    let sent: Awaited<ReturnType<TransactionSender["send"]>>;
    try {
      sent = await deps.sender.send({
        purpose: FINANCE_PURPOSE,
        userId: payer.id,
        // This attempt's: its loans are new, so a later attempt is a transaction of its own.
        idempotencyKey: attemptKeyOf(
          row.id,
          plan.loans.map((loan) => loan.id),
        ),
        to: routerAddress,
        data: router.interface.encodeFunctionData("payWithLoans", [
          refFromUuid(row.id),
          getAddress(row.merchantWallet),
          getAddress(wallet),
          plan.loans.map((loan) => [refFromUuid(loan.id), loan.price, loan.principal, loan.interest, loan.fee, loan.durationDays]),
        ]),
      });
    } catch (error) {
      // Refused (by the simulation, the chain or the node): nothing moved and nothing can. The attempt
      // fails at once, its loans cancelled with it (D-89). An answer that did not come (pending) leaves
      // the attempt to end by itself: its hold lapses, and attempts.ts settles it from the chain.
      if (error instanceof TransactionRevertedError || error instanceof TransactionRefusedError) {
        const short =
          error instanceof TransactionRevertedError &&
          (error.revert?.name === "StakingVaultInsufficientLiquidity" || error.revert?.name === "LoanBookFundingCapReached");
        await deps.attempts.fail(row, method, short ? "insufficient_liquidity" : "refused", true);
      }
      return chainFailure(error, financedRevert);
    }
    await deps.mirror.untilIndexed(sent.blockNumber);
    await deps.financing.settle(row.id, sent.txHash);
    await deps.events.take(deps.clock.now(), deps.userWrite.eventIds(sent, deps.events.consumer.types));
    return {
      paymentId: row.id,
      status: "success" as const,
      method,
      amount: usdcNumber(row.amount),
      fee: usdcNumber(plan.fee),
      net: usdcNumber(row.amount - plan.fee),
      txHash: sent.txHash,
      redirectUrl: row.redirectUrl === null ? null : withPaymentId(row.redirectUrl, row.id),
      loans: plan.loans.map((loan) => ({
        loanId: loan.id,
        amount: usdcNumber(loan.principal),
        totalRepayment: usdcNumber(loan.principal + loan.interest),
        durationDays: loan.durationDays,
      })),
    };
  }

  /** A direct payment's answer (run-and-sandbox.md section 4), from the payment as the mirror has it after `txHash`. */
  function directAnswer(after: PaymentRow, txHash: string) {
    const fee = after.fee ?? feeOf(after.amount, "direct");
    return {
      paymentId: after.id,
      status: "success" as const,
      method: "direct" as PaymentMethod,
      amount: usdcNumber(after.amount),
      fee: usdcNumber(fee),
      net: usdcNumber(after.amount - fee),
      txHash,
      redirectUrl: after.redirectUrl === null ? null : withPaymentId(after.redirectUrl, after.id),
      loans: [],
    };
  }

  return {
    /** What the hosted checkout shows of a payment: public to whoever has its link (the merchant's name, never its ids or metadata). */
    async checkout(id: string) {
      const row = await anyPayment(id);
      return {
        id: row.id,
        status: row.status,
        merchantName: row.merchantName,
        description: row.description,
        amount: row.amount,
        methods: row.methods as PaymentMethod[],
        expiresAt: row.expiresAt,
        redirectUrl: row.redirectUrl,
        cancelUrl: row.cancelUrl,
        schedule: row.methods.includes("split")
          ? splitSchedule(row.amount, row.splitOptions as { installments?: number; frequency?: Frequency } | null)!
          : [],
      };
    },

    /**
     * A payer pays (run-and-sandbox.md section 4). The payment is held for this attempt in one
     * statement (20 concurrent attempts: one holds it, the others are refused), then paid by the
     * payer's own transaction through the router, which pays a ref at most once whatever happens
     * to the hold. The test addresses fail without moving anything.
     */
    async pay(payer: UserRecord, id: string, input: { method: PaymentMethod; payerAddress?: string | undefined }, operation: OperationKey) {
      const row = await anyPayment(id);
      const refused = payRefusal(row);
      if (refused) throw refused;
      if (!row.methods.includes(input.method)) {
        throw new AppError("VALIDATION_ERROR", `This payment takes ${row.methods.join(", ")}`, {
          field: "method",
          reason: `one of ${row.methods.join(", ")}`,
        });
      }
      const wallet = payer.walletAddress.toLowerCase();
      const payerAddress = (input.payerAddress ?? wallet).toLowerCase();
      refuseSelfPayment(payer, row, payerAddress);
      // The service signs only for the payer's managed wallet: in production the address must be it,
      // and the sandbox's test addresses are ordinary addresses (run-and-sandbox.md section 4 is test mode).
      if (deps.production && payerAddress !== wallet) {
        throw new AppError("VALIDATION_ERROR", "payerAddress must be your own wallet", {
          field: "payerAddress",
          reason: "not your wallet",
        });
      }
      if (!deps.production && (payerAddress === DECLINING_ADDRESS || payerAddress === INSUFFICIENT_FUNDS_ADDRESS)) {
        const declined = payerAddress === DECLINING_ADDRESS;
        await deps.attempts.fail(row, input.method, declined ? "declined" : "insufficient_funds", false);
        throw declined
          ? new AppError("PAYMENT_DECLINED", "The payment was declined (test address)", { field: "payerAddress", reason: "declined" })
          : new AppError("INSUFFICIENT_BALANCE", "Not enough USDC to pay (test address)", {
              field: "payerAddress",
              reason: "insufficient funds",
            });
      }
      if (input.method !== "direct") return payFinanced(payer, row, input.method);
      // Made ready for the payer's own wallet to sign (D-119), nothing is sent: no hold to take.
      const preparing = operation.wallet !== undefined && "prepare" in operation.wallet;
      if (!preparing && !(await repo.claim(row.id, { method: input.method, payerId: payer.id, payerAddress: wallet }, deps.clock.now()))) {
        throw payRefusal(await anyPayment(row.id)) ?? new AppError("PAYMENT_IN_PROGRESS", "Try again in a moment", undefined, 5);
      }
      const terms = [refFromUuid(row.id), getAddress(row.merchantWallet), row.amount] as const;
      let sent: Awaited<ReturnType<UserWrite["send"]>>;
      try {
        sent = await deps.userWrite.send({
          user: payer,
          purpose: "payment.pay",
          operation,
          to: routerAddress,
          call: {
            pulls: { spender: routerAddress, value: row.amount },
            data: router.interface.encodeFunctionData("pay", terms),
            // A wallet the payer holds signs one message (D-120): the router's nonce for these terms binds it to this payment.
            byAuthorization: {
              nonce: keccak256(AbiCoder.defaultAbiCoder().encode(["bytes32", "address", "uint256"], terms)),
              data: ({ from, validAfter, validBefore, v, r, s }) =>
                router.interface.encodeFunctionData("payWithAuthorization", [...terms, from, validAfter, validBefore, v, r, s]),
            },
          },
          reverts: (revert) =>
            revert.name === "PaymentRouterAlreadyPaid" ? new AppError("ALREADY_PAID", "This payment was paid already") : undefined,
        });
      } catch (error) {
        const refused = error instanceof AppError && (error.code === "ALREADY_PAID" || error.code === "SERVICE_UNAVAILABLE");
        const paid = !preparing && refused && payer.custody === "self" ? await paidByPayerMeanwhile(row, wallet) : null;
        if (paid) return directAnswer(paid, paid.paidTxHash!);
        // Refused before anything moved: the hold goes back (and a wallet short of USDC is the merchant's payment.failed).
        if (!preparing && error instanceof AppError && error.code !== "SERVICE_UNAVAILABLE") {
          if (error.code === "INSUFFICIENT_BALANCE") await deps.attempts.fail(row, input.method, "insufficient_funds", true);
          else await deps.db.prisma.$transaction((tx) => repo.release(tx, row.id, null));
        }
        throw error;
      }
      await deps.events.take(deps.clock.now(), deps.userWrite.eventIds(sent, deps.events.consumer.types));
      return directAnswer((await repo.find(row.id, deps.clock.now()))!, sent.txHash);
    },

    /**
     * What each of the payment's methods would cost the signed-in payer now (the checkout shows it
     * before they choose): only what they could pay. A payment that cannot be paid now (paid,
     * expired, cancelled) or by them (its merchant) is refused as `pay` refuses it; credit and
     * split are not eligible when the payer may not borrow it or the pool cannot lend it now.
     */
    async terms(payer: UserRecord, id: string) {
      const row = await anyPayment(id);
      const refused = row.status === "processing" ? null : payRefusal(row);
      if (refused) throw refused;
      refuseSelfPayment(payer, row, payer.walletAddress.toLowerCase());
      const now = deps.clock.now().getTime();
      const dueDate = (days: number) => new Date(now + days * 86_400_000).toISOString();
      const lendable = row.methods.some((method) => method !== "direct") ? await deps.pool.lendableAssets() : 0n;
      const quote = async (method: "credit" | "split") => {
        try {
          const plan = await planFor(payer, row, method);
          // The vault lends each principal whole (its insurance fee stays in the vault, but not as idle USDC).
          const lent = plan.loans.reduce((sum, loan) => sum + loan.principal, 0n);
          return lendable < lent ? { plan: null, reason: "INSUFFICIENT_LIQUIDITY" } : { plan, reason: null };
        } catch (error) {
          if (error instanceof AppError && (error.code === "NOT_ELIGIBLE" || error.code === "INVALID_AMOUNT"))
            return { plan: null, reason: error.details?.reason ?? error.code };
          throw error;
        }
      };
      const terms: PayerTerms = {};
      if (row.methods.includes("direct")) terms.direct = { total: usdcNumber(row.amount) };
      if (row.methods.includes("credit")) {
        const { plan, reason } = await quote("credit");
        const loan = plan?.loans[0];
        terms.credit = {
          eligible: plan !== null,
          reason,
          interestRate: loan ? (plan!.rateBps ?? rateBpsOf(loan)) / 10_000 : null,
          insuranceFee: loan ? usdcNumber(loan.insuranceFee) : null,
          interest: loan ? usdcNumber(loan.interest) : null,
          totalRepayment: plan ? usdcNumber(plan.totalRepayment) : null,
          dueDate: loan ? dueDate(loan.durationDays) : null,
        };
      }
      if (row.methods.includes("split")) {
        const { plan, reason } = await quote("split");
        terms.split = {
          eligible: plan !== null,
          reason,
          installments: (plan?.loans ?? []).map((loan) => ({
            amount: usdcNumber(loan.principal),
            insuranceFee: usdcNumber(loan.insuranceFee),
            totalRepayment: usdcNumber(loan.principal + loan.interest),
            dueDate: dueDate(loan.durationDays),
          })),
        };
      }
      return terms;
    },
  };
}

export type Checkout = ReturnType<typeof createCheckout>;
