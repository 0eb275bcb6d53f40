// The money sandbox's manifest (domain/module.ts): its routes, mounted outside production only.
import { defineModule } from "../module.js";

export const sandboxModule = defineModule({ name: "sandbox", routeTag: "Sandbox (development only)" });
