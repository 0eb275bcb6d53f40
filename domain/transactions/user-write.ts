// One write of a user's money, the sequence every domain that moves it runs (vault, social vault,
// loans, payments): sent as the user through the relay (user-transactions.ts), signed by the
// managed wallet or by the user's own (prepared first, then sent with its signature: D-119), its revert turned
// into the domain's code (a wallet short of USDC is INSUFFICIENT_BALANCE for every domain), its
// own event read from the receipt, and answered once the mirror has its block (read-your-writes).
import type { Contract } from "ethers";
import { formatUsdc2 } from "../../core/money.js";
import { AppError } from "../errors.js";
import { chainDedupeKey, chainEventId, ordinalsOf } from "../events/ids.js";
import type { OperationKey } from "../idempotency/operation-key.js";
import type { UserRecord } from "../users/repo.js";
import type { TransactionRevertedError } from "./failures.js";
import { chainFailure, tokenRefusal } from "./failures.js";
import type { MirrorWait } from "./read-your-writes.js";
import { requireReceiptEvent } from "./receipts.js";
import type { SentTransaction } from "./sender.js";
import type { UserCallData, UserTransactions } from "./user-transactions.js";
import { PreparedForSignature, signatureRefusals, WALLET_SIGNATURE_HEADER } from "./wallet-signatures.js";

export type Revert = NonNullable<TransactionRevertedError["revert"]>;

export interface UserWriteDeps {
  chainId: number;
  transactions: Pick<UserTransactions, "send" | "prepareForSignature">;
  mirror: Pick<MirrorWait, "untilIndexed">;
}

export interface UserWriteInput {
  user: Pick<UserRecord, "id" | "walletIndex" | "walletAddress" | "custody">;
  /** What it does (`vault.deposit`, `payment.pay`, ...): with the operation's key, a retry finds the transaction sent first. */
  purpose: string;
  operation: OperationKey;
  to: string;
  call: UserCallData;
  /** The domain's own reverts as its codes; undefined leaves a revert to the shared ones, then 503. */
  reverts?: (revert: Revert) => AppError | undefined;
  /** The request field an INSUFFICIENT_BALANCE of the wallet names (default `amount`). */
  field?: string;
}

export interface UserWriteResult extends SentTransaction {
  /** Whether the mirror had the block when the write answered (false after the wait's time-out). */
  indexed: boolean;
}

/** The reverts every domain answers alike. */
function sharedRevert(revert: Revert, field: string): AppError | undefined {
  if (tokenRefusal(revert) === "balance") {
    // OpenZeppelin's error names the balance; a token's reason string (Circle's USDC) does not.
    const held = revert.name === "ERC20InsufficientBalance" ? `${formatUsdc2(revert.args[1] as bigint)} USDC` : "less USDC than this";
    return new AppError("INSUFFICIENT_BALANCE", `Your wallet holds ${held}`, { field, reason: "more than your USDC balance" });
  }
  return undefined;
}

/**
 * The outbox id of each of the transaction's facts of `type` its `logs` (by log index) hold: counted
 * over the whole receipt, as the indexer counts them (D-91), since a request in a batch has only
 * its own logs.
 */
function factIds(chainId: number, sent: Pick<SentTransaction, "txHash" | "receipt">, indexes: readonly number[], type: string): string[] {
  const all = sent.receipt.logs;
  const ordinals = ordinalsOf(all);
  return indexes.map((index) => {
    const at = all.findIndex((log) => log.index === index);
    const log = all[at]!;
    return chainEventId(
      chainDedupeKey(chainId, { txHash: sent.txHash, address: log.address, topic0: log.topics[0] ?? "", ordinal: ordinals[at]! }, type),
    );
  });
}

export function createUserWrite(deps: UserWriteDeps) {
  return {
    /** Sends the write as the user and answers after its receipt and the mirror (see the file's head). */
    async send(input: UserWriteInput): Promise<UserWriteResult> {
      const { wallet, ...key } = input.operation;
      const call = {
        user: { id: input.user.id, walletIndex: input.user.walletIndex, walletAddress: input.user.walletAddress },
        purpose: input.purpose,
        ...key,
        to: input.to,
        ...input.call,
      };
      const failure = (error: unknown) =>
        chainFailure(error, (revert) => input.reverts?.(revert) ?? sharedRevert(revert, input.field ?? "amount"));
      // The service holds no key of a wallet its user signed in with: the wallet signs (D-119).
      if (input.user.custody === "self") {
        if (!wallet) {
          throw signatureRefusals.required(
            `sign this write with it: the same path with /prepare answers what to sign, then send this request again with its signature in ${WALLET_SIGNATURE_HEADER}`,
          );
        }
        if ("prepare" in wallet) throw new PreparedForSignature(await deps.transactions.prepareForSignature(call).catch(failure));
      } else if (wallet) {
        throw new AppError("CONFLICT", "The service signs for your managed wallet: send the write itself, with no wallet signature", {
          field: WALLET_SIGNATURE_HEADER,
          reason: "your wallet is managed",
        });
      }
      const signed = wallet && "signature" in wallet ? { signed: wallet } : {};
      const sent = await deps.transactions.send({ ...call, ...signed }).catch(failure);
      return { ...sent, indexed: await deps.mirror.untilIndexed(sent.blockNumber) };
    },

    /**
     * The write's own event (`name` of `contract`, which it always emits), decoded, with the id
     * of the domain event the indexer derived from it as `type` (for the write's rewards).
     */
    eventOf<T>(contract: Contract, sent: SentTransaction, name: string) {
      const { args, index } = requireReceiptEvent<T>(contract, sent, name);
      return { args, eventId: (type: string) => factIds(deps.chainId, sent, [index], type)[0]! };
    },

    /**
     * The ids the outbox can hold for the transaction's facts of these types: one per log and
     * type (ids the indexer recorded no event for are simply not found), for a consumer's `take`.
     */
    eventIds(sent: Pick<SentTransaction, "txHash" | "logs" | "receipt">, types: readonly string[]): string[] {
      const indexes = sent.logs.map((log) => log.index);
      return types.flatMap((type) => factIds(deps.chainId, sent, indexes, type));
    },
  };
}

export type UserWrite = ReturnType<typeof createUserWrite>;
