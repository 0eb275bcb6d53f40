// The social vault for its owner and guardians: created through the factory as the user's own
// transaction (a clone per user), configured once, deposits, instant withdrawals within the rolling
// daily limit, guarded withdrawals, guardians, the duress lock, and the guardians' recovery of a
// lost key. Every write is the user's own transaction through the relay (domain/transactions), so
// a wallet calling the contracts directly takes the same paths; figures come from the chain's
// receipt and the mirror. Money in bigint micro-USDC, formatted only in the views. One file per role; context.ts holds what they share.
import { type SocialVaultServiceDeps, socialVaultContext } from "./context.js";
import { createVaultGuardians } from "./guardians.js";
import { createVaultLifecycle } from "./lifecycle.js";
import { createVaultLocks } from "./locks.js";
import { createVaultRecovery } from "./recovery.js";
import { createVaultWithdrawals } from "./withdrawals.js";

export { duressCommitmentOf, duressKeyOf, MIN_AMOUNT_MICRO, type SocialVaultServiceDeps } from "./context.js";
export type { WithdrawalStatus } from "./views.js";

export function createSocialVaultService(deps: SocialVaultServiceDeps) {
  const context = socialVaultContext(deps);
  return {
    ...createVaultLifecycle(context),
    ...createVaultWithdrawals(context),
    ...createVaultGuardians(context),
    ...createVaultLocks(context),
    ...createVaultRecovery(context),
  };
}

export type SocialVaultService = ReturnType<typeof createSocialVaultService>;
