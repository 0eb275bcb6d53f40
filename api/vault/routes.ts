import { vaultModule } from "../../domain/vault/module.js";
import type { VaultService } from "../../domain/vault/service.js";
import { pageRequestOf } from "../http/pagination.js";
import { defineRoute, type RouteSpec, routesOf } from "../http/route.js";
import {
  calculateBody,
  calculateResponse,
  depositBody,
  depositResponse,
  ratesResponse,
  transactionsQuery,
  vaultPosition,
  vaultStatus,
  vaultTransaction,
  withdrawBody,
  withdrawResponse,
  yieldHistoryQuery,
  yieldHistoryResponse,
} from "./schemas.js";

export function vaultRoutes({ vault }: { vault: VaultService }): RouteSpec[] {
  return routesOf(vaultModule, [
    defineRoute({
      method: "get",
      path: "/v1/vault/status",
      operationId: "getVaultStatus",
      summary: "The staking vault's public figures, read from the chain",
      auth: "none",
      response: vaultStatus,
      handler: async () => ({ data: await vault.status() }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/vault/position",
      operationId: "getVaultPosition",
      summary: "Your tmUSDC, its value now and the yield it earned",
      auth: "user",
      response: vaultPosition,
      handler: async ({ principal }) => ({ data: await vault.position(principal().user) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/vault/deposit",
      operationId: "depositToVault",
      summary: "Deposit USDC from your managed wallet for tmUSDC",
      description:
        "Sent as your own transaction (your managed wallet signs a forward request, and once a permit that lets the contract take its USDC from then on; the service pays the gas). Answers after the receipt, once the mirror shows the deposit.",
      auth: "user",
      signable: true,
      body: depositBody,
      response: depositResponse,
      errors: ["INSUFFICIENT_BALANCE", "AMOUNT_TOO_SMALL", "VAULT_PAUSED", "SERVICE_UNAVAILABLE"],
      handler: async ({ body, principal, operation }) => ({
        data: await vault.deposit(principal().user, body.amount, operation),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/vault/withdraw",
      operationId: "withdrawFromVault",
      summary: "Redeem tmUSDC for USDC to your managed wallet",
      description: "Sent as your own transaction, like a deposit. Answers after the receipt, once the mirror shows it.",
      auth: "user",
      signable: true,
      body: withdrawBody,
      response: withdrawResponse,
      errors: ["AMOUNT_TOO_SMALL", "INSUFFICIENT_BALANCE", "INSUFFICIENT_LIQUIDITY", "VAULT_PAUSED", "SERVICE_UNAVAILABLE"],
      handler: async ({ body, principal, operation }) => ({
        data: await vault.withdraw(principal().user, body.tmUSDCAmount, operation),
      }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/vault/yield/history",
      operationId: "getVaultYieldHistory",
      summary: "Your yield by day over a period",
      auth: "user",
      query: yieldHistoryQuery,
      response: yieldHistoryResponse,
      handler: async ({ query, principal }) => ({ data: await vault.yieldHistory(principal().user, query.period) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/vault/yield/calculate",
      operationId: "calculateVaultYield",
      summary: "Project the yield of a deposit at today's APY",
      auth: "none",
      body: calculateBody,
      response: calculateResponse,
      handler: async ({ body }) => ({ data: await vault.calculate(body.amount, body.duration) }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/vault/rates",
      operationId: "getVaultRates",
      summary: "The interest rate model: the current point and the five-point curve",
      auth: "none",
      response: ratesResponse,
      handler: async () => ({ data: await vault.rates() }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/vault/transactions",
      operationId: "listVaultTransactions",
      summary: "Your deposits and withdrawals, newest first",
      auth: "user",
      query: transactionsQuery,
      response: vaultTransaction.array(),
      paginated: true,
      handler: async ({ query, principal }) => vault.transactions(principal().user, pageRequestOf(query)),
    }),
  ]);
}
