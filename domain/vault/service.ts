// The staking vault for users: deposits and withdrawals sent as the user's own transactions
// (domain/transactions/user-transactions.ts), figures read from the chain (status, rates, the
// amounts of a write) or from the mirror (position, history), all in bigint micro-USDC and
// formatted only in the views at the end.
import type { Contract, JsonRpcProvider } from "ethers";
import type { Clock } from "../../core/clock.js";
import { formatUsdc2, rateNumber, usdcNumber } from "../../core/money.js";
import { platformContractAt } from "../../core/platform-abi.js";
import { AppError } from "../errors.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import { type PageRequest, paginate } from "../pagination.js";
import type { RewardsConsumer } from "../rewards/consumer.js";
import type { UserCallData } from "../transactions/user-transactions.js";
import type { UserWrite } from "../transactions/user-write.js";
import type { UserRecord } from "../users/repo.js";
import type { XpRepo } from "../xp/repo.js";
import { SHARES_PER_MICRO, type VaultRepo } from "./repo.js";
import { type YieldPeriod, yieldHistory } from "./yield.js";

export interface VaultServiceDeps {
  provider: JsonRpcProvider;
  /** The staking vault (read-only; writes go through `transactions`). */
  vault: Contract;
  repo: VaultRepo;
  clock: Pick<Clock, "now">;
  /** The one path of a user's money write (domain/transactions/user-write.ts). */
  userWrite: UserWrite;
  rewards: Pick<RewardsConsumer, "xpOf">;
  xp: Pick<XpRepo, "xpEarnedFor">;
}

export const YIELD_DISCLAIMER =
  "A projection at today's supply APY, held constant and paid pro rata by day, from what the deposit would redeem for at once (the open loans' expected losses are out of the exit price until they are repaid). The vault's rate moves with loan demand and repayments, losses can lower it, and past yield does not promise future yield. Not financial advice.";

const WAD = 10n ** 18n;
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;
/** The vault's virtual shares (10^(18 - 6)): its inflation protection. */
const VIRTUAL_SHARES = 10n ** 12n;
/** USDC per whole tmUSDC (WAD) at `assets`, as the vault's `exchangeRate` counts it (virtual share and asset included). */
const entryRate = (assets: bigint, supply: bigint) => ((assets + 1n) * VIRTUAL_SHARES * WAD) / (supply + VIRTUAL_SHARES);

/**
 * The smallest withdrawal, as USDC: what 0.01 USDC (the smallest amount the API shows) is worth in
 * tmUSDC at the current rate. Less is a transaction the service pays gas for that moves nothing
 * visible; the whole balance may always be withdrawn, however small.
 */
export const MIN_WITHDRAW_MICRO = 10_000n;

/** AMOUNT_TOO_SMALL naming the field and its minimum: the contract's deposit minimum and the service's withdrawal minimum alike. */
function amountTooSmall(field: "amount" | "tmUSDCAmount", minimum: string, what: string) {
  return new AppError("AMOUNT_TOO_SMALL", `The minimum ${what} is ${minimum}`, { field, reason: `at least ${minimum}` });
}

/** A vault contract's revert as the spec's error (part 7), naming the request field at fault. */
function vaultRevert(revert: { name: string; args: unknown[] }, field: "amount" | "tmUSDCAmount"): AppError | undefined {
  const args = revert.args as bigint[];
  switch (revert.name) {
    case "EnforcedPause":
      return new AppError("VAULT_PAUSED", "The vault is temporarily paused");
    case "StakingVaultDepositTooSmall":
      return amountTooSmall(field, `${formatUsdc2(args[1]!)} USDC`, "deposit");
    case "ERC4626ExceededMaxRedeem":
    case "ERC4626ExceededMaxWithdraw":
      return new AppError("INSUFFICIENT_BALANCE", `You hold ${formatUsdc2(args[2]! / SHARES_PER_MICRO)} tmUSDC`, {
        field,
        reason: "more than your tmUSDC balance",
      });
    case "StakingVaultInsufficientLiquidity":
      return new AppError("INSUFFICIENT_LIQUIDITY", `The vault has ${formatUsdc2(args[1]!)} USDC available to withdraw now`, {
        field,
        reason: "more than the vault's idle USDC",
      });
    default:
      return undefined;
  }
}

export function createVaultService(deps: VaultServiceDeps) {
  const { vault, repo } = deps;
  const vaultAddress = vault.target as string;

  /** What `shares` redeem for now (the contract's previewRedeem), in micro-USDC. */
  const redeemValue = async (shares: bigint): Promise<bigint> => (shares === 0n ? 0n : ((await vault.previewRedeem(shares)) as bigint));

  /** The XP a mirrored write earned (its own rewards applied now rather than by the worker's next run). */
  async function xpFor(user: UserRecord, indexed: boolean, eventId: string) {
    if (!indexed) return 0;
    const earned = await deps.rewards.xpOf(deps.clock.now(), eventId);
    return earned ?? deps.xp.xpEarnedFor(user.id, eventId);
  }

  /**
   * One vault write as the user: sent, its event read from the receipt, the rate and the user's
   * tmUSDC at the receipt's block, and (once the mirror has it) the XP it earned.
   */
  async function write(
    user: UserRecord,
    kind: "deposit" | "withdraw",
    operation: OperationKey,
    field: "amount" | "tmUSDCAmount",
    call: UserCallData,
  ) {
    const sent = await deps.userWrite.send({
      user,
      purpose: `vault.${kind}`,
      operation,
      to: vaultAddress,
      call,
      reverts: (revert) => vaultRevert(revert, field),
      field,
    });
    const { args, eventId } = deps.userWrite.eventOf<{ assets: bigint; shares: bigint }>(
      vault,
      sent,
      kind === "deposit" ? "Deposit" : "Withdraw",
    );
    const at = { blockTag: sent.blockNumber };
    const [rate, balance, xpEarned] = await Promise.all([
      vault.exchangeRate(at) as Promise<bigint>,
      vault.balanceOf(user.walletAddress, at) as Promise<bigint>,
      xpFor(user, sent.indexed, eventId(`vault.${kind}`)),
    ]);
    return { assets: args.assets, shares: args.shares, rate, balance, xpEarned, txHash: sent.txHash };
  }

  return {
    /** The public figures of the vault, read from the chain. */
    async status() {
      const [status, unrealizedLosses, provisions, entryAssets] = await Promise.all([
        vault.vaultStatus(),
        vault.unrealizedLosses() as Promise<bigint>,
        vault.provisioned() as Promise<bigint>,
        vault.entryAssets() as Promise<bigint>,
      ]);
      return {
        totalDeposits: formatUsdc2(status.totalAssets),
        totalBorrowed: formatUsdc2(status.totalBorrowed),
        utilization: rateNumber(status.utilization),
        currentAPY: rateNumber(status.supplyRate),
        exchangeRate: rateNumber(status.exchangeRate),
        tmUSDCSupply: formatUsdc2(status.totalSupply / SHARES_PER_MICRO),
        unrealizedLosses: formatUsdc2(unrealizedLosses),
        provisions: formatUsdc2(provisions),
        entryExchangeRate: rateNumber(entryRate(entryAssets, status.totalSupply)),
      };
    },

    /** The interest rate model: the current point and the five points of the curve. */
    async rates() {
      const [status, modelAddress] = await Promise.all([vault.vaultStatus(), vault.interestRateModel()]);
      const model = platformContractAt("interestRateModel", modelAddress, deps.provider);
      const [points, modelSupplyRate] = await Promise.all([
        model.ratePoints() as Promise<{ utilization: bigint; borrowRate: bigint; supplyRate: bigint }[]>,
        // The curve's point at today's utilization (the status's `currentAPY` is what depositors earn now).
        model.supplyRate(status.utilization) as Promise<bigint>,
      ]);
      return {
        utilization: rateNumber(status.utilization),
        borrowRate: rateNumber(status.borrowRate),
        supplyAPY: rateNumber(modelSupplyRate),
        model: points.map((point) => ({
          utilization: rateNumber(point.utilization),
          borrowRate: rateNumber(point.borrowRate),
          supplyAPY: rateNumber(point.supplyRate),
        })),
      };
    },

    /**
     * The user's position: tmUSDC from the mirror, valued at today's rate (previewRedeem);
     * earned yield = that value minus net deposits (USDC in minus USDC out). Yield accrues in the
     * rate and is never claimed, so depositedAt is when the current holding began (a deposit or a
     * transfer in, since the balance was last 0) and lastYieldClaim the latest distribution the
     * holding took part in, or depositedAt before any; both null while no tmUSDC is held.
     */
    async position(user: UserRecord) {
      const row = await repo.positionOf(user.walletAddress);
      const shares = row?.shares ?? 0n;
      const value = await redeemValue(shares);
      const heldSince = shares > 0n ? (row?.heldSince ?? null) : null;
      const lastYield = heldSince ? (row?.lastDistributionAt ?? heldSince) : null;
      return {
        userId: user.id,
        tmUSDCBalance: formatUsdc2(shares / SHARES_PER_MICRO),
        usdcValue: formatUsdc2(value),
        earnedYield: formatUsdc2(value - (row?.deposited ?? 0n) + (row?.withdrawn ?? 0n)),
        depositedAt: heldSince?.toISOString() ?? null,
        lastYieldClaim: lastYield?.toISOString() ?? null,
      };
    },

    /** Deposits `amount` micro-USDC from the user's wallet (the relay's standing allowance: D-86). */
    async deposit(user: UserRecord, amount: bigint, operation: OperationKey) {
      const wallet = user.walletAddress;
      const done = await write(user, "deposit", operation, "amount", {
        pulls: { spender: vaultAddress, value: amount },
        data: vault.interface.encodeFunctionData("deposit", [amount, wallet]),
      });
      return {
        depositAmount: formatUsdc2(done.assets),
        exchangeRate: rateNumber(done.rate),
        tmUSDCReceived: formatUsdc2(done.shares / SHARES_PER_MICRO),
        newBalance: formatUsdc2(done.balance / SHARES_PER_MICRO),
        txHash: done.txHash,
        xpEarned: done.xpEarned,
      };
    },

    /**
     * Redeems `tmUsdc` micro-tmUSDC for USDC to the user's wallet. Asking for the whole balance
     * as shown (six decimals) redeems every share, leaving no dust below a micro-tmUSDC. Less than
     * MIN_WITHDRAW_MICRO's worth, unless the whole balance, is AMOUNT_TOO_SMALL, nothing sent.
     */
    async withdraw(user: UserRecord, tmUsdc: bigint, operation: OperationKey) {
      const wallet = user.walletAddress;
      const held = (await vault.balanceOf(wallet)) as bigint;
      const whole = tmUsdc === held / SHARES_PER_MICRO && held > 0n;
      if (!whole) {
        // The contract's own rounding: the shares 0.01 USDC takes (rounded up), in whole micro-tmUSDC.
        const minimum = ceilDiv((await vault.previewWithdraw(MIN_WITHDRAW_MICRO)) as bigint, SHARES_PER_MICRO);
        if (tmUsdc < minimum) {
          throw amountTooSmall("tmUSDCAmount", `${usdcNumber(minimum)} tmUSDC (0.01 USDC now) or your whole balance`, "withdrawal");
        }
      }
      const shares = whole ? held : tmUsdc * SHARES_PER_MICRO;
      const done = await write(user, "withdraw", operation, "tmUSDCAmount", {
        data: vault.interface.encodeFunctionData("redeem", [shares, wallet, wallet]),
      });
      return {
        tmUSDCRedeemed: formatUsdc2(done.shares / SHARES_PER_MICRO),
        exchangeRate: rateNumber(done.rate),
        usdcReceived: formatUsdc2(done.assets),
        remainingBalance: formatUsdc2(done.balance / SHARES_PER_MICRO),
        txHash: done.txHash,
      };
    },

    /** The user's yield by day over `period`, from the mirror (see domain/vault/yield.ts). */
    async yieldHistory(user: UserRecord, period: YieldPeriod) {
      const wallet = user.walletAddress;
      const [transactions, ratePoints, row] = await Promise.all([repo.chronologicalOf(wallet), repo.ratePoints(), repo.positionOf(wallet)]);
      const valueNow = await redeemValue(row?.shares ?? 0n);
      const result = yieldHistory({ period, now: deps.clock.now(), transactions, ratePoints, valueNow });
      return {
        period,
        totalYield: formatUsdc2(result.totalYieldMicro),
        averageAPY: result.averageAPY,
        history: result.history.map((day) => ({ date: day.day, yield: formatUsdc2(day.yieldMicro), apy: day.apy })),
      };
    },

    /**
     * What `amount` micro-USDC deposited now would come to on exit after `days` at today's supply
     * APY (pro rata, rounded down): a deposit pays the entry price and an exit gets the exit price,
     * less the open loans' provisions and expected losses (D-121, D-126), so the projection starts
     * from what the deposit would redeem for at once; a short one may show a loss.
     */
    async calculate(amount: bigint, days: number) {
      const [status, entry] = await Promise.all([vault.vaultStatus(), vault.entryAssets() as Promise<bigint>]);
      const apy = status.supplyRate as bigint;
      const onExit = entry === 0n ? amount : (amount * (status.totalAssets as bigint)) / entry;
      const total = onExit + (onExit * apy * BigInt(days)) / (WAD * 365n);
      return {
        depositAmount: formatUsdc2(amount),
        duration: days,
        currentAPY: rateNumber(apy),
        projectedYield: formatUsdc2(total - amount),
        projectedTotal: formatUsdc2(total),
        disclaimer: YIELD_DISCLAIMER,
      };
    },

    /** One page of the user's vault transactions, newest first. */
    transactions: (user: UserRecord, page: PageRequest) => paginate(page, repo.listing(user.walletAddress)),
  };
}

export type VaultService = ReturnType<typeof createVaultService>;
