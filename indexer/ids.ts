// The ids the indexer writes belong to the domain; re-exported for the handlers.
export { chainDedupeKey, chainEventId } from "../domain/events/ids.js";
export { loanIdFromRef, refFromLoanId } from "../domain/loans/ids.js";
export { withdrawalIdOf } from "../domain/social-vault/ids.js";
