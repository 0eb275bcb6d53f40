import { entity } from "../state.js";
import { type Context, handlersOf, type IndexedLog, iso, touched } from "./context.js";

/**
 * USDC transfers the platform watches (`decodeLogs` keeps only those with an end at a platform
 * contract, a social vault or a managed wallet): mirrored, and folded into social vault balances.
 */
export const usdcHandlers = handlersOf("usdc", {
  Transfer: {
    entities: ({ from, to }) => [entity.socialVault(from), entity.socialVault(to)],
    apply(ctx, { from, to, value }, log) {
      if (ctx.emit) ctx.out.usdcTransfers.push([log.blockNumber, log.logIndex, log.txHash, from, to, value.toString(), iso(log.timestamp)]);
      move(ctx, log, entity.socialVault(from), -value);
      move(ctx, log, entity.socialVault(to), value);
    },
  },
});

/**
 * Changes the balance of the vault `key` if the log names it (its entities: the vaults it changes).
 * USDC can reach a vault's predicted address before the factory creates it: until its row exists,
 * what it received is held in `early`, and its creation starts from it (D-93).
 */
function move(ctx: Context, log: IndexedLog, key: string, amount: bigint): void {
  if (!log.entities.includes(key)) return;
  const row = touched(ctx, ctx.state.vaults, key, log.blockNumber);
  if (row) row.balance += amount;
  else if (ctx.state.inScope(key)) ctx.state.early.set(key, (ctx.state.early.get(key) ?? 0n) + amount);
}
