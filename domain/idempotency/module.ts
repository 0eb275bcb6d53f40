// The idempotency records' manifest (domain/module.ts).
import { defineModule } from "../module.js";

export const idempotencyModule = defineModule({
  name: "idempotency",
  errors: { IDEMPOTENCY_KEY_REUSED: 422, IDEMPOTENCY_IN_PROGRESS: 409 },
  tables: { IdempotencyRecord: "own" },
});
