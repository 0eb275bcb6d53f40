// The users' manifest (domain/module.ts).
import { defineModule } from "../module.js";

export const usersModule = defineModule({
  name: "users",
  tables: { User: "own" },
  jobs: ["users.erase"],
  routeTag: "Users",
});
