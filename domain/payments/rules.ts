// The rules of merchants' payments (D-81) that the merchant's side (service.ts) and the payer's
// (checkout.ts) share: the methods and their fees, the checkout's bounds, the sandbox's test
// addresses, the redirects, and why a payment cannot be paid now.
import { AppError } from "../errors.js";
import type { EventData } from "../events/catalogue.js";
import { PAYMENT_METHODS, type PaymentMethod, splitSchedule } from "./financing.js";
import type { PaymentRow } from "./repo.js";

export { PAYMENT_METHODS, type PaymentMethod };
/** The fee of each method, in basis points of the amount (service-spec part 2); the router charges direct's on chain. */
export const FEE_BPS: Record<PaymentMethod, bigint> = { direct: 100n, credit: 200n, split: 150n };
/** A checkout's life (Stripe Checkout's bounds): 30 minutes to 24 hours, 24 hours unless the merchant says otherwise. */
export const MIN_EXPIRY_S = 1_800;
export const MAX_EXPIRY_S = 86_400;
/** The merchant's metadata, serialized, at most (Stripe allows 50 keys of 500 characters: about this much). */
export const METADATA_MAX_BYTES = 4_096;
/** run-and-sandbox.md section 4: payers at these addresses always fail, outside the real flow. */
export const DECLINING_ADDRESS = "0x000000000000000000000000000000000000dec1";
export const INSUFFICIENT_FUNDS_ADDRESS = "0x00000000000000000000000000000000000f0001";
/** Why an attempt failed, in `payment.failed` (the catalogue's reasons, D-89). */
export type FailureReason = EventData<"payment.failed">["reason"];

/** A fee in micro-USDC: the basis points of `amount`, rounded down as the router does (the merchant's favour). */
export const feeOf = (amount: bigint, method: PaymentMethod) => (amount * FEE_BPS[method]) / 10_000n;

/** The fee a method takes from a payment: split's is each installment's, rounded down one by one. */
export function methodFee(amount: bigint, method: PaymentMethod, splitOptions: { installments?: number } | null): bigint {
  if (method !== "split") return feeOf(amount, method);
  // Without a tier's term the plan always has a schedule: its own period.
  return splitSchedule(amount, splitOptions)!.reduce((sum, part) => sum + feeOf(part.amount, "split"), 0n);
}

/** Why a redirect URL is refused, or null: https, or http on loopback outside production (no user name, no fragment). */
export function redirectRefusal(text: string, production: boolean): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute https URL";
  }
  if (url.username || url.password) return "must not carry a user name or password";
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol === "https:" || (url.protocol === "http:" && loopback && !production)) return null;
  return production ? "must be an https URL" : "must be an https URL (or http on 127.0.0.1, localhost or [::1] outside production)";
}

export function withPaymentId(url: string, paymentId: string): string {
  const target = new URL(url);
  target.searchParams.set("paymentId", paymentId);
  return target.href;
}

/** The payment, or PAYMENT_NOT_FOUND. */
export function requirePayment(row: PaymentRow | null): PaymentRow {
  if (!row) throw new AppError("PAYMENT_NOT_FOUND", "No such payment");
  return row;
}

/** Why an attempt cannot pay this payment now, as its error; null when it may. */
export function payRefusal(row: PaymentRow): AppError | null {
  switch (row.status) {
    case "success":
      return new AppError("ALREADY_PAID", "This payment was paid already");
    case "cancelled":
      return new AppError("PAYMENT_CANCELLED", "The merchant cancelled this payment");
    case "expired":
      return new AppError("PAYMENT_EXPIRED", `This payment expired at ${row.expiresAt.toISOString()}`);
    case "processing":
      return new AppError("PAYMENT_IN_PROGRESS", "An attempt to pay this payment is under way; try again in a moment", undefined, 5);
    default:
      return null;
  }
}
