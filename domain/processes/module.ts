// The processes' manifest (domain/module.ts): which are alive, and what they share (the service
// clock, secrets), and the API's own routes (health, the OpenAPI document).
import { defineModule } from "../module.js";

export const processesModule = defineModule({
  name: "processes",
  // The sandbox's clock offset pairs with the chain's time: a new embedded chain starts at real time.
  tables: { ServiceProcess: "own", ServiceClock: "chain", ServiceSecret: "own" },
  routeTag: "Meta",
});
