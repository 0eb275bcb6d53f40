// The transactions' manifest (domain/module.ts): the service's sent transactions, the relayed
// requests and the paying accounts' nonces, all of the chain they were sent on.
import { defineModule } from "../module.js";

export const transactionsModule = defineModule({
  name: "transactions",
  errors: { INSUFFICIENT_BALANCE: 400, SIGNATURE_REQUIRED: 403 },
  tables: { ChainTransaction: "chain", RelayedRequest: "chain", SenderNonce: "chain" },
  // The ERC-2771 forwarder the relay sends users' signed requests through.
  contracts: { forwarder: {} },
  jobs: ["relay.restore"],
});
