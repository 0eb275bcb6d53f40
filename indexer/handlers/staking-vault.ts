import { ZeroAddress } from "ethers";
import { formatUsdc2, rateNumber } from "../../core/money.js";
import { entity, type Position } from "../state.js";
import { type Context, event, handlersOf, iso } from "./context.js";

/** tmUSDC has 18 decimals, USDC 6: shares / 10^12 read as USDC amounts. */
const SHARES_PER_USDC_UNIT = 1_000_000_000_000n;

/** The owner's position, created empty on its first event; undefined outside a rebuild's scope. */
function position(ctx: Context, owner: string, block: number): Position | undefined {
  const key = entity.position(owner);
  if (!ctx.state.inScope(key)) return undefined;
  let row = ctx.state.positions.get(key);
  if (!row) {
    row = {
      owner,
      shares: 0n,
      costBasis: 0n,
      realizedYield: 0n,
      deposited: 0n,
      withdrawn: 0n,
      firstDepositAt: null,
      lastDepositAt: null,
      lastWithdrawAt: null,
      heldSince: null,
      peakCostBasis: 0n,
      updatedBlock: block,
    };
    ctx.state.positions.set(key, row);
  }
  ctx.state.touch(key);
  row.updatedBlock = block;
  return row;
}

/** The tmUSDC vault: share transfers, deposits, withdrawals and yield distributions. */
export const stakingVaultHandlers = handlersOf("stakingVault", {
  Transfer: {
    entities: ({ from, to }) => [from, to].filter((a) => a !== ZeroAddress).map((a) => entity.position(a)),
    apply(ctx, { from, to, value: shares }, log) {
      const mintOrBurn = from === ZeroAddress || to === ZeroAddress;
      // A holder's transfer to itself changes nothing of its holding.
      const moves = from !== to;
      if (from !== ZeroAddress) {
        const sender = position(ctx, from, log.blockNumber);
        if (sender) {
          // A transfer to another holder takes its share of the cost basis with it (burns are
          // handled by the Withdraw event, which knows the assets paid out).
          if (!mintOrBurn && sender.shares > 0n) sender.costBasis -= (sender.costBasis * shares) / sender.shares;
          sender.shares -= shares;
          if (moves && sender.shares === 0n) sender.heldSince = null;
        }
      }
      if (to !== ZeroAddress) {
        const receiver = position(ctx, to, log.blockNumber);
        if (receiver) {
          // A holding begins with the first shares received (a deposit's mint, or a transfer
          // from another wallet) while the balance is 0; it ends when the balance is 0 again.
          if (moves && receiver.shares === 0n && shares > 0n) receiver.heldSince = log.timestamp;
          receiver.shares += shares;
        }
      }
    },
  },
  Deposit: {
    entities: ({ owner }) => [entity.position(owner)],
    apply(ctx, { sender, owner, assets, shares }, log) {
      if (ctx.emit) {
        ctx.out.vaultTransactions.push([
          log.blockNumber,
          log.logIndex,
          log.txHash,
          log.ordinal,
          "deposit",
          owner,
          sender,
          owner,
          assets.toString(),
          shares.toString(),
          iso(log.timestamp),
        ]);
      }
      const row = position(ctx, owner, log.blockNumber);
      if (row) {
        row.costBasis += assets;
        if (row.costBasis > row.peakCostBasis) row.peakCostBasis = row.costBasis;
        row.deposited += assets;
        row.firstDepositAt ??= log.timestamp;
        row.lastDepositAt = log.timestamp;
      }
      event(ctx, log, "vault.deposit", owner, (userOf) => ({
        userId: userOf(owner),
        walletAddress: owner,
        usdcAmount: formatUsdc2(assets),
        tmUSDCReceived: formatUsdc2(shares / SHARES_PER_USDC_UNIT),
        txHash: log.txHash,
        raw: { assets, shares },
      }));
    },
  },
  Withdraw: {
    entities: ({ owner }) => [entity.position(owner)],
    apply(ctx, { sender, receiver, owner, assets, shares }, log) {
      if (ctx.emit) {
        ctx.out.vaultTransactions.push([
          log.blockNumber,
          log.logIndex,
          log.txHash,
          log.ordinal,
          "withdraw",
          owner,
          sender,
          receiver,
          assets.toString(),
          shares.toString(),
          iso(log.timestamp),
        ]);
      }
      const row = position(ctx, owner, log.blockNumber);
      if (row) {
        // The burn (a Transfer to zero) came first: the shares before it are shares + burned.
        const before = row.shares + shares;
        const cost = before > 0n ? (row.costBasis * shares) / before : 0n;
        row.costBasis -= cost;
        row.realizedYield += assets - cost;
        row.withdrawn += assets;
        row.lastWithdrawAt = log.timestamp;
      }
      event(ctx, log, "vault.withdraw", owner, (userOf) => ({
        userId: userOf(owner),
        walletAddress: owner,
        tmUSDCRedeemed: formatUsdc2(shares / SHARES_PER_USDC_UNIT),
        usdcReceived: formatUsdc2(assets),
        txHash: log.txHash,
        raw: { assets, shares },
      }));
    },
  },
  StakingVaultYieldDistributed: {
    entities: () => [],
    apply(ctx, { distributor, amount, totalYield, exchangeRate }, log) {
      if (ctx.emit) {
        ctx.out.yieldDistributions.push([
          log.blockNumber,
          log.logIndex,
          log.txHash,
          distributor,
          amount.toString(),
          totalYield.toString(),
          exchangeRate.toString(),
          iso(log.timestamp),
        ]);
      }
      event(ctx, log, "vault.yield_distributed", null, () => ({
        amount: formatUsdc2(amount),
        totalYield: formatUsdc2(totalYield),
        newExchangeRate: rateNumber(exchangeRate),
        txHash: log.txHash,
        raw: { amount, totalYield, exchangeRate },
      }));
    },
  },
});
