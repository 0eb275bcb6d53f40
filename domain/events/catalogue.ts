// The one catalogue of domain events: a zod schema per event type, each declared in its domain's
// manifest (domain/<name>/module.ts, with define.ts), used by every writer (the indexer for chain
// facts, the domain services for their own) and every consumer.
//
// Each event's stored data is the webhook-facing `data` of service-spec part 6 (presentation
// formats: two-decimal strings, JSON numbers) plus `raw`, the exact values internal consumers
// read (micro-USDC as bigint, on-chain ids). `raw` never leaves the service: `publicData`
// strips it. Writers hand bigints and the catalogue encodes them (decimal strings in JSON);
// consumers decode back to bigints, so no amount goes through a presentation string.
import { z } from "zod";
import { MODULE_EVENTS } from "../modules.js";
import type { EventDefinition } from "./define.js";

/** Every event type, from the domains' manifests (domain/<name>/module.ts). */
export const EVENT_CATALOGUE = MODULE_EVENTS;

export type EventType = keyof typeof EVENT_CATALOGUE;
export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

type Definition<T extends EventType> = (typeof EVENT_CATALOGUE)[T];
type RawOf<T extends EventType> = Definition<T>["raw"] extends z.ZodObject ? Definition<T>["raw"] : undefined;

/** An event's data as code sees it: the public fields, and `raw` with bigints where the event has raw fields. */
export type EventData<T extends EventType> = z.output<Definition<T>["data"]> &
  (RawOf<T> extends z.ZodObject ? { raw: z.output<RawOf<T>> } : unknown);

/** The stored (JSON) form of an event's data. */
export type StoredEventData = Record<string, unknown>;

const storedSchemas = new Map<EventType, z.ZodType>(
  EVENT_TYPES.map((type) => {
    const definition = EVENT_CATALOGUE[type] as EventDefinition;
    return [type, definition.raw ? definition.data.extend({ raw: definition.raw }) : definition.data];
  }),
);

export const isEventType = (type: string): type is EventType => storedSchemas.has(type as EventType);

/** Validates an event's data and turns it into its stored JSON form; throws on data that breaks the catalogue. */
export function encodeEventData<T extends EventType>(type: T, data: EventData<T>): StoredEventData {
  return z.encode(storedSchemas.get(type)!, data) as StoredEventData;
}

/** A stored event's data as code sees it (bigints in `raw`); throws when it does not match its type's schema. */
export function decodeEventData<T extends EventType>(type: T, stored: unknown): EventData<T> {
  return z.decode(storedSchemas.get(type)!, stored as never) as EventData<T>;
}

/** The webhook-facing data of a stored event: the spec's fields, without `raw`. */
export function publicData(type: EventType, stored: unknown): Record<string, unknown> {
  return EVENT_CATALOGUE[type].data.parse(stored) as Record<string, unknown>;
}
