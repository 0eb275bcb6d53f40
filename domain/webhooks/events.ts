// The event names a webhook may subscribe to (service-spec part 6's list) and which outbox events
// each is delivered for: both from the `webhook` rule of each event type in its domain's manifest.
import { EVENT_CATALOGUE, EVENT_TYPES, type EventType } from "../events/catalogue.js";
import type { WebhookRule } from "../events/define.js";

type RuleOf<T extends EventType> = (typeof EVENT_CATALOGUE)[T]["webhook"];
const ruleOf = (type: EventType) => EVENT_CATALOGUE[type].webhook as WebhookRule | undefined;
/** The outbox's event types a webhook hears. */
export type DeliveredType = { [T in EventType]: RuleOf<T> extends WebhookRule ? T : never }[EventType];
type NameOf<T extends DeliveredType> = RuleOf<T> extends { as: infer Name } ? Name : T;

/** The outbox's event types a webhook hears, and the name each is delivered under. */
export const DELIVERED_AS = Object.fromEntries(
  EVENT_TYPES.flatMap((type) => {
    const rule = ruleOf(type);
    return rule === undefined ? [] : [[type, typeof rule === "object" && "as" in rule ? rule.as : type]];
  }),
) as { [T in DeliveredType]: NameOf<T> };
export const DELIVERED_TYPES = Object.keys(DELIVERED_AS) as DeliveredType[];
export const isDeliveredType = (type: string): type is DeliveredType => Object.hasOwn(DELIVERED_AS, type);

export type WebhookEvent = (typeof DELIVERED_AS)[DeliveredType];
export const WEBHOOK_EVENTS = [...new Set(Object.values(DELIVERED_AS))] as [WebhookEvent, ...WebhookEvent[]];
/** Events of no user: every subscriber hears them. */
export const EVERYONES = EVENT_TYPES.filter((type) => {
  const rule = ruleOf(type);
  return typeof rule === "object" && "everyone" in rule;
}) as WebhookEvent[];

const known = new Set<string>(WEBHOOK_EVENTS);
export const isWebhookEvent = (name: string): name is WebhookEvent => known.has(name);

/** What a webhook receives when a reorg removed a fact it was sent: `<name>.reverted` (deliveries.ts). */
export type RevertedWebhookEvent = `${WebhookEvent}.reverted`;
/** A delivery's name, its payload's `event`: an event name, or a reorg's follow-up of one. */
export type DeliveryEvent = WebhookEvent | RevertedWebhookEvent;

const REVERTED = ".reverted";
/** The event name a reorg's follow-up takes back (loan.funded of loan.funded.reverted); undefined for an event name. */
export function revertedEventOf(name: DeliveryEvent): WebhookEvent | undefined {
  const taken = name.endsWith(REVERTED) ? name.slice(0, -REVERTED.length) : undefined;
  return taken !== undefined && isWebhookEvent(taken) ? taken : undefined;
}
export const isDeliveryEvent = (name: string): name is DeliveryEvent =>
  isWebhookEvent(name) || (name.endsWith(REVERTED) && isWebhookEvent(name.slice(0, -REVERTED.length)));
