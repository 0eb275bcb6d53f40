// Names for part 2's shapes, taken from the generated OpenAPI types (so they follow the API):
// what each resource method returns, for an app's own signatures.
import type { operations } from "./generated/openapi.js";

/** The whole success answer of an operation (the envelope: `data`, and `pagination` for lists). */
export type SuccessOf<O extends keyof operations> = operations[O]["responses"] extends infer R
  ? R extends { 200: { content: { "application/json": infer B } } }
    ? B
    : R extends { 201: { content: { "application/json": infer B } } }
      ? B
      : never
  : never;
/** The `data` of an operation's success answer (by its OpenAPI operationId). */
export type DataOf<O extends keyof operations> = SuccessOf<O> extends { data: infer D } ? D : never;
/** The JSON body an operation takes. */
export type BodyOf<O extends keyof operations> = operations[O] extends { requestBody?: { content: { "application/json": infer B } } }
  ? B
  : never;

export type User = DataOf<"getMe">;
export type PublicUser = DataOf<"getUser">;
export type UserXp = DataOf<"getUserXp">;
export type TrustScore = DataOf<"getTrustScore">;
export type LoanEligibility = DataOf<"getLoanEligibility">;
export type Loan = DataOf<"getLoan">;
export type VaultStatus = DataOf<"getVaultStatus">;
export type VaultPosition = DataOf<"getVaultPosition">;
export type VaultTransaction = DataOf<"listVaultTransactions">[number];
export type SocialVaultConfig = DataOf<"getSocialVaultConfig">;
export type SocialVaultWithdrawal = DataOf<"getSocialVaultWithdrawal">;
export type Notification = DataOf<"listNotifications">[number];
export type Webhook = DataOf<"createWebhook">;
export type WebhookDelivery = DataOf<"listWebhookDeliveries">[number];
export type Payment = DataOf<"getPayment">;
export type PaymentRefund = DataOf<"refundPayment">;
export type CreatePaymentRequest = BodyOf<"createPayment">;
