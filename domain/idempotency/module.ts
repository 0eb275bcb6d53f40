// The idempotency records' manifest (domain/module.ts).
import { defineModule } from "../module.js";

export const idempotencyModule = defineModule({ name: "idempotency", tables: { IdempotencyRecord: "own" } });
