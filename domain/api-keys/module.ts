// The API keys' manifest (domain/module.ts).
import { defineModule } from "../module.js";

export const apiKeysModule = defineModule({ name: "api-keys", tables: { ApiKey: "own" }, routeTag: "API keys" });
