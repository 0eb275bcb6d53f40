import type { JsonRpcProvider } from "ethers";
import type { Clock } from "../../core/clock.js";
import type { LoansService } from "../../domain/loans/service.js";
import { sandboxModule } from "../../domain/sandbox/module.js";
import type { SandboxService } from "../../domain/sandbox/service.js";
import type { UsersService } from "../../domain/users/service.js";
import { AppError } from "../http/errors.js";
import { defineRoute, type RouteDefinition, type RouteSpec, routesOf } from "../http/route.js";
import { loanDetail, loanIdParams } from "../loans/schemas.js";
import type { DevIdentityProvider } from "./identity-provider.js";
import {
  advanceBody,
  advanceResponse,
  faucetBody,
  faucetResponse,
  jwksResponse,
  planBody,
  planParams,
  planResponse,
  reorgBody,
  reorgResponse,
  snapshotResponse,
  tokenBody,
  tokenResponse,
  yieldBody,
  yieldResponse,
} from "./schemas.js";

export interface DevRouteDeps {
  identity: DevIdentityProvider;
  clock: Pick<Clock, "now" | "advance">;
  chain: { provider: Pick<JsonRpcProvider, "send"> };
  users: Pick<UsersService, "setPlan">;
  /** The money sandbox; absent where this process sends no transactions. */
  sandbox?: SandboxService;
  /** Loans, funded by /dev/loans/{loanId}/fund where this process sends transactions. */
  loans?: Pick<LoansService, "fundNow">;
}

/** The sandbox of run-and-sandbox.md section 3 that belongs to the API; never mounted in production. */
export function devRoutes({ identity, clock, chain, users, sandbox, loans }: DevRouteDeps): RouteSpec[] {
  const lending: RouteDefinition[] = loans
    ? [
        defineRoute({
          method: "post",
          path: "/dev/loans/{loanId}/fund",
          operationId: "devFundLoan",
          summary: "Fund a pending loan now, as the pool's funding job would",
          description:
            "The same code as the funding job: the pool's operator sends fundLoan, the borrower's managed wallet receives netAmount, and the answer (the loan's detail) waits for the mirror. Idempotent by the loan id: calling it for a funded loan answers its detail and sends nothing. 409 CONFLICT for a cancelled or lapsed request; 400 INSUFFICIENT_LIQUIDITY when the pool cannot fund it now (it stays pending).",
          auth: "none",
          params: loanIdParams,
          response: loanDetail,
          errors: ["LOAN_NOT_FOUND", "CONFLICT", "INSUFFICIENT_LIQUIDITY"],
          handler: async ({ params }) => ({ data: await loans.fundNow(params.loanId) }),
        }),
      ]
    : [];
  const money: RouteDefinition[] = sandbox
    ? [
        defineRoute({
          method: "post",
          path: "/dev/faucet",
          operationId: "devFaucet",
          summary: "Mint test USDC to your managed wallet",
          description:
            "MockUSDC only (a chain with real USDC answers 503). At least 0.01 (else 400 AMOUNT_TOO_SMALL) and at most 10,000 USDC per call. Moves money on chain; send an Idempotency-Key to retry it safely.",
          auth: "token",
          body: faucetBody,
          response: faucetResponse,
          errors: ["AMOUNT_TOO_SMALL", "SERVICE_UNAVAILABLE"],
          handler: async ({ body, principal, operation }) => ({
            data: await sandbox.faucet(principal().user, body.amount, operation),
          }),
        }),
        defineRoute({
          method: "post",
          path: "/dev/vault/yield",
          operationId: "devVaultYield",
          summary: "Add yield to the staking vault (the exchange rate rises)",
          description:
            "Mints the test USDC to the service's account, approves the vault and distributes it (three transactions, resumed by a retry with the same Idempotency-Key). 409 CONFLICT while the vault has no deposits.",
          auth: "none",
          body: yieldBody,
          response: yieldResponse,
          errors: ["CONFLICT", "SERVICE_UNAVAILABLE"],
          handler: async ({ body, operation }) => ({ data: await sandbox.distributeYield(body.amount, operation) }),
        }),
      ]
    : [];
  return routesOf(sandboxModule, [
    ...money,
    ...lending,
    defineRoute({
      method: "post",
      path: "/dev/token",
      operationId: "devIssueToken",
      summary: "Issue a development access token",
      auth: "none",
      // Tokens are credentials: an anonymous replay by key would hand one caller's token to another.
      idempotent: false,
      body: tokenBody,
      response: tokenResponse,
      handler: async ({ body }) => ({
        data: { accessToken: await identity.issue(body), tokenType: "Bearer" as const, expiresIn: body.expiresIn },
      }),
    }),
    defineRoute({
      method: "get",
      path: "/dev/.well-known/jwks.json",
      operationId: "devJwks",
      summary: "The development identity provider's public keys (bare JWKS, no envelope)",
      auth: "none",
      bare: true,
      response: jwksResponse,
      handler: async () => ({ raw: identity.jwks() }),
    }),
    defineRoute({
      method: "post",
      path: "/dev/time/advance",
      operationId: "devAdvanceTime",
      summary: "Move the service clock and the chain clock forward together",
      auth: "none",
      body: advanceBody,
      response: advanceResponse,
      errors: ["SERVICE_UNAVAILABLE"],
      handler: async ({ body }) => {
        // The chain moves first: if it refuses, the service clock has not moved either.
        let head: { timestamp: string | number };
        try {
          await chain.provider.send("evm_increaseTime", [body.seconds]);
          await chain.provider.send("evm_mine", []);
          head = await chain.provider.send("eth_getBlockByNumber", ["latest", false]);
        } catch {
          throw new AppError("SERVICE_UNAVAILABLE", "The chain did not accept the time change");
        }
        // An automining chain gives each block at least a second, so after bursts of blocks its
        // clock runs ahead of the service's: the service clock catches up, so that what the
        // chain's time allows (a guardian active after the timelock) the API shows too.
        const ahead = Number(BigInt(head.timestamp)) - Math.floor(clock.now().getTime() / 1_000) - body.seconds;
        await clock.advance(body.seconds + Math.max(0, ahead));
        return { data: { now: clock.now().toISOString() } };
      },
    }),
    defineRoute({
      method: "post",
      path: "/dev/chain/snapshot",
      operationId: "devChainSnapshot",
      summary: "Mark the chain's head as the fork point of a reorganisation to come (POST /dev/chain/reorg)",
      description:
        "The embedded chain, or a Hardhat node: evm_snapshot. What happens after it (your app's writes, the service's) is what a reorganisation to this snapshot removes.",
      auth: "none",
      response: snapshotResponse,
      errors: ["SERVICE_UNAVAILABLE"],
      handler: async () => {
        try {
          const snapshotId = (await chain.provider.send("evm_snapshot", [])) as string;
          const head = (await chain.provider.send("eth_blockNumber", [])) as string;
          return { data: { snapshotId, blockNumber: Number(BigInt(head)) } };
        } catch {
          throw new AppError("SERVICE_UNAVAILABLE", "This chain takes no snapshots (only the embedded chain and Hardhat nodes do)");
        }
      },
    }),
    defineRoute({
      method: "post",
      path: "/dev/chain/reorg",
      operationId: "devChainReorg",
      summary: "Reorganise the chain: drop every block since a snapshot and mine a longer branch of empty blocks in their place",
      description:
        "What a deeper reorganisation of a real chain does, on the sandbox's chain (evm_revert, then evm_mine past the old head), so that an app can test its handling of `<event>.reverted` webhooks and of facts that come back: the service's own transactions the reorganisation removed are broadcast again as they were (D-90), and their facts come back under their original ids. 400 VALIDATION_ERROR for a snapshot that is unknown or used.",
      auth: "none",
      body: reorgBody,
      response: reorgResponse,
      errors: ["VALIDATION_ERROR", "SERVICE_UNAVAILABLE"],
      handler: async ({ body }) => {
        const blockNumber = async () => Number(BigInt((await chain.provider.send("eth_blockNumber", [])) as string));
        let before: number;
        let reverted: boolean;
        try {
          before = await blockNumber();
          reverted = (await chain.provider.send("evm_revert", [body.snapshotId])) as boolean;
        } catch {
          throw new AppError("SERVICE_UNAVAILABLE", "This chain cannot be reorganised (only the embedded chain and Hardhat nodes can)");
        }
        if (!reverted) {
          throw new AppError("VALIDATION_ERROR", "No such snapshot (a snapshot is used once)", {
            field: "snapshotId",
            reason: "unknown or used",
          });
        }
        const forkBlock = await blockNumber();
        // One block more than the old branch had, plus what was asked: the new branch replaces it.
        for (let mined = 0; mined < before - forkBlock + body.extraBlocks; mined += 1) await chain.provider.send("evm_mine", []);
        return { data: { forkBlock, removedBlocks: before - forkBlock, head: await blockNumber() } };
      },
    }),
    defineRoute({
      method: "put",
      path: "/dev/users/{userId}/plan",
      operationId: "devSetPlan",
      summary: "Set a user's plan (rate limits, API keys)",
      auth: "none",
      params: planParams,
      body: planBody,
      response: planResponse,
      errors: ["USER_NOT_FOUND"],
      handler: async ({ params, body }) => ({ data: await users.setPlan(params.userId, body.plan) }),
    }),
  ]);
}
