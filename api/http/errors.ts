// The HTTP status of each error code: the platform's and each domain's, declared with the codes
// (domain/errors.ts and the manifests).
export { AppError, ERROR_STATUS, type ErrorCode, type ErrorDetails } from "../../domain/errors.js";
