// @trustmint/sdk: the TrustMint API client (createClient), the live notification stream, webhook
// verification, exact USDC conversions and the shapes' types. The payments library is
// `@trustmint/sdk/payments`.
export { type ClientOptions, createClient, type RequestOptions, type TrustMintClient, type WriteOptions } from "./client.js";
export { ApiConnectionError, ApiError, ApiTimeoutError, type ErrorCode, TrustMintError } from "./errors.js";
export { fromMicro, toAmount, toMicro } from "./money.js";
export type { Page, PageCursor, Pagination } from "./pages.js";
export type { ResponseInfo, WithResponse } from "./response.js";
export type { StreamEnd, StreamEvent, StreamOptions } from "./stream.js";
export type { Credentials, RetryOptions } from "./transport.js";
export type * from "./types.js";
export { SDK_VERSION } from "./version.js";
export type { Eip1193Provider, EthersSigner, SigningWallet, TypedData, ViemWalletClient, WalletSigner } from "./wallet.js";
export {
  isTestEvent,
  type SignOptions,
  signWebhook,
  type VerifyOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventName,
  type WebhookEventOf,
  type WebhookHeaders,
  type WebhookTestEvent,
  WebhookVerificationError,
  type WebhookVerificationFailure,
} from "./webhooks.js";
