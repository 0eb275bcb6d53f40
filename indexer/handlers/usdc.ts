import { entity } from "../state.js";
import { handlersOf, iso, touched } from "./context.js";

/**
 * USDC transfers the platform watches (`decodeLogs` keeps only those with an end at a platform
 * contract, a social vault or a managed wallet): mirrored, and folded into social vault balances.
 */
export const usdcHandlers = handlersOf("usdc", {
  Transfer: {
    entities: ({ from, to }) => [entity.socialVault(from), entity.socialVault(to)],
    apply(ctx, { from, to, value }, log) {
      if (ctx.emit) ctx.out.usdcTransfers.push([log.blockNumber, log.logIndex, log.txHash, from, to, value.toString(), iso(log.timestamp)]);
      const out = touched(ctx, ctx.state.vaults, entity.socialVault(from), log.blockNumber);
      if (out) out.balance -= value;
      const into = touched(ctx, ctx.state.vaults, entity.socialVault(to), log.blockNumber);
      if (into) into.balance += value;
    },
  },
});
