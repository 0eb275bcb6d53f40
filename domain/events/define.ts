// How an event type is declared: its zod shapes and who hears it. Each domain declares its own in
// its manifest (`domain/<name>/module.ts`); the catalogue (catalogue.ts) is their union.
import { z } from "zod";

/** An integer amount in the token's smallest unit (micro-USDC, or 1e-18 tmUSDC): a decimal string in JSON, a bigint in code. */
export const integerAmount = z.codec(z.string().regex(/^-?\d+$/), z.bigint(), {
  decode: (text) => BigInt(text),
  encode: (value) => value.toString(),
});

export const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/);
export const txHash = z.string().regex(/^0x[0-9a-fA-F]{64}$/);
export const isoTime = z.string().datetime({ offset: true });
/** Two-decimal USDC string (service-spec part 1, vault money values). */
export const usdc2 = z.string().regex(/^-?\d+\.\d{2}$/);
/** A platform user id, or null when the wallet is not a platform user's. */
export const userRef = z.string().nullable();

/**
 * Who hears an event on webhooks: `true`, its subscribers under its own name (service-spec part
 * 6); `as`, under another event's name; `everyone`, every subscriber of the name (an event of no
 * user). Absent: no webhook hears it.
 */
export type WebhookRule = true | { readonly as: string } | { readonly everyone: true };

export interface EventDefinition<
  D extends z.ZodObject = z.ZodObject,
  R extends z.ZodObject | undefined = z.ZodObject | undefined,
  W extends WebhookRule | undefined = WebhookRule | undefined,
> {
  /** Who writes it: the indexer (from a contract event) or a domain service. */
  source: "chain" | "service";
  description: string;
  /** The webhook-facing fields (presentation formats). */
  data: D;
  /** The exact values internal consumers read (bigints); never leaves the service. */
  raw: R;
  webhook: W;
}

export function defineEvent<
  D extends z.ZodObject,
  R extends z.ZodObject | undefined = undefined,
  const W extends WebhookRule | undefined = undefined,
>(definition: { source: "chain" | "service"; description: string; data: D; raw?: R; webhook?: W }): EventDefinition<D, R, W> {
  return { raw: undefined as R, webhook: undefined as W, ...definition };
}
