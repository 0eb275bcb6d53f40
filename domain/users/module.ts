// The users' manifest (domain/module.ts).
import { defineModule } from "../module.js";

export const usersModule = defineModule({
  name: "users",
  errors: { USER_NOT_FOUND: 404 },
  tables: { User: "own", LinkedWallet: "own" },
  jobs: ["users.erase"],
  routeTag: "Users",
});
