// Names for part 2's shapes, taken from the generated OpenAPI types (so they follow the API):
// what each resource method returns, for an app's own signatures.
import type { components, operations } from "./generated/openapi.js";

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

/** A shape the API names, by its name (the OpenAPI document's component schema): `ApiSchema<"Loan">`. */
export type ApiSchema<N extends keyof components["schemas"]> = components["schemas"][N];

export type User = ApiSchema<"User">;
export type UserSettings = ApiSchema<"UserSettings">;
export type PublicUser = ApiSchema<"PublicUser">;
export type UserXp = ApiSchema<"UserXp">;
export type ActivityEntry = ApiSchema<"ActivityEntry">;
export type Guardian = ApiSchema<"Guardian">;
export type TrustScore = ApiSchema<"TrustScore">;
export type TrustScoreBreakdown = ApiSchema<"TrustScoreBreakdown">;
export type TrustScoreHistory = ApiSchema<"TrustScoreHistory">;
export type LoanEligibility = ApiSchema<"LoanEligibility">;
export type LoanRequest = ApiSchema<"LoanRequest">;
export type Loan = ApiSchema<"Loan">;
export type LoanListItem = DataOf<"listLoans">[number];
export type LoanPayoff = ApiSchema<"LoanPayoff">;
export type VaultStatus = ApiSchema<"VaultStatus">;
export type VaultPosition = ApiSchema<"VaultPosition">;
export type VaultTransaction = ApiSchema<"VaultTransaction">;
export type YieldHistory = ApiSchema<"YieldHistory">;
export type InterestRateModel = ApiSchema<"InterestRateModel">;
export type SocialVaultConfig = ApiSchema<"SocialVaultConfig">;
export type SocialVaultWithdrawal = ApiSchema<"SocialVaultWithdrawal">;
export type Notification = ApiSchema<"Notification">;
export type NotificationPreferences = ApiSchema<"NotificationPreferences">;
export type Webhook = ApiSchema<"Webhook">;
export type WebhookDelivery = ApiSchema<"WebhookDelivery">;
export type Payment = ApiSchema<"Payment">;
export type PaymentRefund = ApiSchema<"PaymentRefund">;
export type ApiKey = ApiSchema<"ApiKey">;
export type CreatePaymentRequest = BodyOf<"createPayment">;
