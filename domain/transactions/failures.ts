// What the transaction sender throws, as the spec's codes: one mapping for every domain that
// moves money, each adding the meaning of its own contract's reverts.
import { AppError } from "../errors.js";
import { TransactionPendingError, TransactionRefusedError, TransactionRevertedError } from "./sender.js";

type Revert = NonNullable<TransactionRevertedError["revert"]>;

/**
 * Throws the AppError for a failed send: `reverts` names the domain's own reverts (undefined for
 * the rest, which are 503 with the error's name); a transaction the node refused or that is not
 * mined yet is 503 saying what to do; anything else is rethrown as it is.
 */
export function chainFailure(error: unknown, reverts: (revert: Revert) => AppError | undefined = () => undefined): never {
  if (error instanceof TransactionPendingError) {
    throw new AppError("SERVICE_UNAVAILABLE", "The transaction is not mined yet; retry with the same Idempotency-Key to get its outcome");
  }
  if (error instanceof TransactionRefusedError) {
    throw new AppError("SERVICE_UNAVAILABLE", "The chain refused the transaction; send the request again with a new Idempotency-Key");
  }
  if (!(error instanceof TransactionRevertedError)) throw error;
  throw (
    (error.revert && reverts(error.revert)) ??
    new AppError("SERVICE_UNAVAILABLE", `The chain refused the transaction (${error.revert?.name ?? "reverted"})`)
  );
}
