/** A social-vault withdrawal's public id: the vault address and the on-chain request id. */
export const withdrawalIdOf = (vault: string, requestId: bigint) => `${vault.toLowerCase()}-${requestId}`;
