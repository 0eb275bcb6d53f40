// Sign-In with Ethereum's manifest (domain/module.ts): an account whose wallet is the user's own.
import { defineModule } from "../module.js";

export const siweModule = defineModule({
  name: "siwe",
  errors: { NONCE_INVALID: 401, MESSAGE_EXPIRED: 401, DOMAIN_MISMATCH: 400, CHAIN_MISMATCH: 400, INVALID_SIGNATURE: 401 },
  tables: { SiweNonce: "own" },
  routeTag: "Sign-In with Ethereum",
});
