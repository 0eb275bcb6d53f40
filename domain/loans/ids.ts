// Loans carry the API's loan id (a UUID) on-chain as their `ref` (core/refs.ts): a ref of another
// shape (a loan funded outside the API) keeps its hex form as the id.
export { refFromUuid as refFromLoanId, uuidFromRef as loanIdFromRef } from "../../core/refs.js";
