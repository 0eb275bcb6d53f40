// What the transaction sender throws, as the spec's codes: one mapping for every domain that
// moves money, each adding the meaning of its own contract's reverts.
import { type Interface, isError } from "ethers";
import { AppError } from "../errors.js";

/** A revert decoded against the platform's ABIs: the custom error's name and arguments. */
export class TransactionRevertedError extends Error {
  override name = "TransactionRevertedError";
  constructor(
    readonly revert: { name: string; args: unknown[] } | null,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The node refused the signed bytes (recorded as `failed`, its nonce filled): nothing was sent,
 * and a retry with the same idempotency key gets this again; a new key sends a new transaction.
 */
export class TransactionRefusedError extends Error {
  override name = "TransactionRefusedError";
}

/** The chain did not settle the transaction in time (it stays recorded; a later start or retry settles it). */
export class TransactionPendingError extends Error {
  override name = "TransactionPendingError";
}

/** A CALL_EXCEPTION decoded against `errors` (null for any other error). */
export function decodeRevert(errors: Interface, error: unknown): TransactionRevertedError | null {
  if (!isError(error, "CALL_EXCEPTION")) return null;
  const data = (error as { data?: string }).data;
  const parsed = data ? errors.parseError(data) : null;
  const revert = parsed ? { name: parsed.name, args: [...parsed.args] } : null;
  return new TransactionRevertedError(revert, revert ? `reverted with ${revert.name}` : (error.shortMessage ?? "reverted"));
}

type Revert = NonNullable<TransactionRevertedError["revert"]>;

/**
 * What a token's refusal of a transfer says, whichever way the token says it: OpenZeppelin 5's
 * custom errors (the test USDC), or the reason strings of Circle's USDC (FiatToken) and of
 * OpenZeppelin 4 ("ERC20: transfer amount exceeds allowance", "... exceeds balance"). Null for
 * any other revert.
 */
export function tokenRefusal(revert: Revert | null | undefined): "allowance" | "balance" | null {
  if (revert?.name === "ERC20InsufficientAllowance") return "allowance";
  if (revert?.name === "ERC20InsufficientBalance") return "balance";
  if (revert?.name !== "Error") return null;
  const reason = String(revert.args[0]);
  if (/allowance/i.test(reason)) return "allowance";
  if (/exceeds balance|insufficient balance/i.test(reason)) return "balance";
  return null;
}

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
