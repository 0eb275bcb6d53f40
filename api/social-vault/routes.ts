import type { SocialVaultService } from "../../domain/social-vault/service.js";
import { defineRoute, type RouteSpec } from "../http/route.js";
import {
  addGuardianBody,
  addGuardianResponse,
  configResponse,
  createBody,
  createResponse,
  depositBody,
  depositResponse,
  guardianParams,
  guardiansResponse,
  instantBody,
  instantResponse,
  removeGuardianResponse,
} from "./schemas.js";

const TAG = "Social vault";

export function socialVaultRoutes({ socialVault }: { socialVault: SocialVaultService }): RouteSpec[] {
  return [
    defineRoute({
      method: "get",
      path: "/v1/social-vault/config",
      operationId: "getSocialVaultConfig",
      tag: TAG,
      summary: "Your social vault's configuration (isConfigured false before you create it)",
      auth: "user",
      response: configResponse,
      handler: async ({ principal }) => ({ data: await socialVault.config(principal().user) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/social-vault",
      operationId: "createSocialVault",
      tag: TAG,
      summary: "Create and configure your social vault (once)",
      description:
        "Sent as your own transaction through the factory (your managed wallet signs; the service pays the gas). The duress PIN is kept only as the contract's keyed hash. A second creation is 409 SOCIAL_VAULT_EXISTS.",
      auth: "user",
      idempotent: true,
      body: createBody,
      response: createResponse,
      errors: ["SOCIAL_VAULT_EXISTS", "SERVICE_UNAVAILABLE"],
      handler: async ({ body, principal, req }) => ({
        data: await socialVault.create(principal().user, body, req.header("idempotency-key")!),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/social-vault/deposit",
      operationId: "depositToSocialVault",
      tag: TAG,
      summary: "Move USDC from your managed wallet into your social vault",
      auth: "user",
      idempotent: true,
      body: depositBody,
      response: depositResponse,
      errors: ["SOCIAL_VAULT_NOT_FOUND", "VAULT_LOCKED", "INSUFFICIENT_BALANCE", "SERVICE_UNAVAILABLE"],
      handler: async ({ body, principal, req }) => ({
        data: await socialVault.deposit(principal().user, body.amount, req.header("idempotency-key")!),
      }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/social-vault/withdraw/instant",
      operationId: "withdrawFromSocialVaultInstantly",
      tag: TAG,
      summary: "Send USDC from your social vault at once, within the rolling daily limit",
      auth: "user",
      idempotent: true,
      body: instantBody,
      response: instantResponse,
      errors: ["SOCIAL_VAULT_NOT_FOUND", "VAULT_LOCKED", "DAILY_LIMIT_EXCEEDED", "INSUFFICIENT_BALANCE", "SERVICE_UNAVAILABLE"],
      handler: async ({ body, principal, req }) => ({
        data: await socialVault.withdrawInstant(principal().user, body.amount, body.recipient, req.header("idempotency-key")!),
      }),
    }),
    defineRoute({
      method: "get",
      path: "/v1/social-vault/guardians",
      operationId: "listSocialVaultGuardians",
      tag: TAG,
      summary: "Your vault's guardians, oldest first",
      auth: "user",
      response: guardiansResponse,
      errors: ["SOCIAL_VAULT_NOT_FOUND"],
      handler: async ({ principal }) => ({ data: await socialVault.guardians(principal().user) }),
    }),
    defineRoute({
      method: "post",
      path: "/v1/social-vault/guardians",
      operationId: "addSocialVaultGuardian",
      tag: TAG,
      summary: "Add a guardian by wallet address (pending until the vault's timelock has passed)",
      auth: "user",
      idempotent: true,
      body: addGuardianBody,
      response: addGuardianResponse,
      errors: [
        "SOCIAL_VAULT_NOT_FOUND",
        "VAULT_LOCKED",
        "INVALID_GUARDIAN",
        "GUARDIAN_EXISTS",
        "GUARDIAN_LIMIT_REACHED",
        "SERVICE_UNAVAILABLE",
      ],
      handler: async ({ body, principal, req }) => ({
        data: await socialVault.addGuardian(principal().user, body.walletAddress, req.header("idempotency-key")!),
      }),
    }),
    defineRoute({
      method: "delete",
      path: "/v1/social-vault/guardians/{guardianId}",
      operationId: "removeSocialVaultGuardian",
      tag: TAG,
      summary: "Remove a guardian: a pending one at once, an active one after the vault's timelock",
      auth: "user",
      idempotent: true,
      params: guardianParams,
      response: removeGuardianResponse,
      errors: ["SOCIAL_VAULT_NOT_FOUND", "VAULT_LOCKED", "GUARDIAN_NOT_FOUND", "CONFLICT", "SERVICE_UNAVAILABLE"],
      handler: async ({ params, principal, req }) => ({
        data: await socialVault.removeGuardian(principal().user, params.guardianId, req.header("idempotency-key")!),
      }),
    }),
  ];
}
