// The transactions' manifest (domain/module.ts): the service's sent transactions, the relayed
// requests and the paying accounts' nonces, all of the chain they were sent on.
import { defineModule } from "../module.js";

export const transactionsModule = defineModule({
  name: "transactions",
  // The refusals of a write a user's own wallet signs (D-119): nothing of it is recorded or sent.
  errors: {
    INSUFFICIENT_BALANCE: 400,
    SIGNATURE_REQUIRED: 403,
    SIGNATURE_MISMATCH: 400,
    REQUEST_MISMATCH: 400,
    REQUEST_EXPIRED: 400,
    REQUEST_REPLAYED: 409,
  },
  tables: { ChainTransaction: "chain", RelayedRequest: "chain", PreparedRequest: "chain", SenderNonce: "chain" },
  // The ERC-2771 forwarder the relay sends users' signed requests through.
  contracts: { forwarder: {} },
  jobs: ["relay.restore"],
});
