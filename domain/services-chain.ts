// The services that send transactions (the sender, the users' relay and what it lets through, the
// vault, the social vault, the sandbox, payments and the checkout, the loans' chain side): only a
// process that holds a chain builds them. createServices (services.ts) calls createMoneyServices
// with the services every process has, so the links between them stay wired in one place.

import { type JsonRpcProvider, Wallet, ZeroAddress } from "ethers";
import type { Clock } from "../core/clock.js";
import type { Deployment } from "../core/deployments.js";
import type { Logger } from "../core/logger.js";
import { type PlatformContractKey, platformContract, platformContractAt, platformErrors } from "../core/platform-abi.js";
import type { ManagedWallets } from "../core/wallets.js";
import type { Db } from "./db.js";
import type { LoanFinancing } from "./loans/financing.js";
import { CONTRACTS } from "./modules.js";
import { createPaymentAttempts } from "./payments/attempts.js";
import { createCheckout } from "./payments/checkout.js";
import type { PaymentEvents } from "./payments/events.js";
import type { PaymentsRepo } from "./payments/repo.js";
import { createPaymentsService } from "./payments/service.js";
import type { RewardsConsumer } from "./rewards/consumer.js";
import { createSandboxService } from "./sandbox/service.js";
import type { GuardianAlerts } from "./social-vault/alerts.js";
import { isSocialVault } from "./social-vault/repo.js";
import { createSocialVaultService } from "./social-vault/service.js";
import { createPayerWatch } from "./transactions/payer.js";
import { createMirrorWait } from "./transactions/read-your-writes.js";
import { createTransactionsRepo } from "./transactions/repo.js";
import { createTransactionSender } from "./transactions/sender.js";
import { createUserTransactions, forwardedCall } from "./transactions/user-transactions.js";
import { createUserWrite } from "./transactions/user-write.js";
import { walletIndexAt } from "./users/repo.js";
import type { VaultRepo } from "./vault/repo.js";
import { createVaultService } from "./vault/service.js";
import type { XpRepo } from "./xp/repo.js";

/**
 * The chain the service sends transactions to, and the account that pays their gas (the
 * deployer outside production).
 */
export interface ChainDeps {
  provider: JsonRpcProvider;
  chainId: number;
  deployment: Deployment;
  operatorKey: string;
  /** The deployment's USDC is the platform's MockUSDC (no USDC_ADDRESS): the faucet can mint it. */
  mockUsdc: boolean;
  /** How long a write waits for the indexer to pass its block (read-your-writes). */
  mirrorWaitMs?: number;
  /** Below this (wei) the paying account is reported low (config PAYER_LOW_BALANCE_WEI). */
  payerLowBalanceWei: bigint;
  /** A sent transaction unmined this long is replaced with higher fees. */
  replaceAfterMs?: number;
}

/** What the money services take from the services every process has (built by createServices). */
export interface MoneyServiceDeps {
  db: Db;
  clock: Pick<Clock, "now">;
  wallets: Pick<ManagedWallets, "signerOf">;
  logger?: Pick<Logger, "warn" | "info">;
  vaultRepo: VaultRepo;
  xpRepo: XpRepo;
  rewards: RewardsConsumer;
  guardianAlerts: GuardianAlerts;
  paymentsRepo: PaymentsRepo;
  paymentEvents: PaymentEvents;
  loanFinancing: LoanFinancing;
  /** Production rules apply (payments' redirect URLs, the checkout's payer). */
  production: boolean;
  /** The address clients reach the API at: payments' checkout URLs start with it. */
  publicBaseUrl: string;
}

/**
 * What users may call through the relay: the platform contracts' user functions, and the user
 * functions of the social vaults the factory created (known to the mirror), nothing else.
 */
export function relayAllowList(deployment: Deployment, isSocialVault: (address: string) => Promise<boolean>) {
  /** The selectors of the calls a module's manifest lets the relay carry (clones share the implementation's ABI). */
  const selectors = (key: PlatformContractKey, names: readonly string[]) => {
    const contract = platformContractAt(key, ZeroAddress);
    return new Set(names.map((name) => contract.interface.getFunction(name)!.selector));
  };
  const relayed = [...CONTRACTS].flatMap(([key, contract]) => (contract.relay ? [{ key, calls: selectors(key, contract.relay) }] : []));
  const allowed = new Map(
    relayed
      .filter(({ key }) => key !== "socialVault")
      .map(({ key, calls }) => [(platformContract(deployment, key).target as string).toLowerCase(), calls]),
  );
  const socialVaultCalls = relayed.find(({ key }) => key === "socialVault")?.calls ?? new Set<string>();
  return async (to: string, data: string) => {
    const selector = data.slice(0, 10);
    const platform = allowed.get(to.toLowerCase());
    if (platform) return platform.has(selector);
    return socialVaultCalls.has(selector) && (await isSocialVault(to));
  };
}

/** The services that send transactions, built only where the process has a chain. */
export function createMoneyServices(
  chain: ChainDeps,
  {
    db,
    clock,
    wallets,
    logger,
    vaultRepo,
    xpRepo,
    rewards,
    guardianAlerts,
    paymentsRepo,
    paymentEvents,
    loanFinancing,
    production,
    publicBaseUrl,
  }: MoneyServiceDeps,
) {
  const contract = (key: Parameters<typeof platformContract>[1]) => platformContract(chain.deployment, key, chain.provider);
  const forwarder = contract("forwarder");
  const usdc = contract("usdc");
  const stakingVault = contract("stakingVault");
  const operator = new Wallet(chain.operatorKey, chain.provider);
  const transactionsRepo = createTransactionsRepo({ db, chainId: chain.chainId, sender: operator.address.toLowerCase() });
  const sender = createTransactionSender({
    repo: transactionsRepo,
    provider: chain.provider,
    chainId: chain.chainId,
    account: operator,
    errors: platformErrors(),
    forwarder,
    logger,
    replaceAfterMs: chain.replaceAfterMs,
    replayOf: (transaction) => forwardedCall({ address: forwarder.target as string, iface: forwarder.interface }, transaction),
  });
  // One relay of users' own transactions for every domain that moves their money.
  const transactions = createUserTransactions({
    repo: transactionsRepo,
    provider: chain.provider,
    chainId: chain.chainId,
    sender,
    forwarder,
    usdc,
    signerOf: (index) => wallets.signerOf(index),
    signerOfWallet: async (address) => {
      // A wallet its user holds (custody "self") has no key here.
      const index = await walletIndexAt(db.prisma, address);
      return index === null ? null : wallets.signerOf(index);
    },
    errors: platformErrors(),
    isAllowed: relayAllowList(chain.deployment, (address) => isSocialVault(db, address)),
    logger,
  });
  const mirror = createMirrorWait({ db, chainId: chain.chainId, timeoutMs: chain.mirrorWaitMs, logger });
  // The one path of every user's money write, whatever the domain.
  const userWrite = createUserWrite({ chainId: chain.chainId, transactions, mirror });
  const vault = createVaultService({
    provider: chain.provider,
    vault: stakingVault,
    repo: vaultRepo,
    clock,
    userWrite,
    rewards,
    xp: xpRepo,
  });
  const payer = createPayerWatch({
    address: sender.address,
    balance: () => sender.balance(),
    lowBalanceWei: chain.payerLowBalanceWei,
    logger,
  });
  const sandbox = createSandboxService({ sender, usdc: chain.mockUsdc ? usdc : null, vault: stakingVault, operator: sender.address });
  const loanBook = { chainId: chain.chainId, loanBook: contract("loanBook"), sender, mirror, userWrite, rewards };
  const socialVault = createSocialVaultService({
    db,
    clock,
    factory: contract("socialVaultFactory"),
    userWrite,
    privateKeyOf: (index) => wallets.signerOf(index).privateKey,
    alerts: guardianAlerts,
    platformContracts: Object.fromEntries(Object.entries(chain.deployment.contracts).map(([key, deployed]) => [key, deployed.address])),
  });
  const paymentRouter = contract("paymentRouter");
  const payments = createPaymentsService({
    clock,
    repo: paymentsRepo,
    router: paymentRouter,
    userWrite,
    events: paymentEvents,
    checkoutBase: publicBaseUrl,
    production,
  });
  const paymentAttempts = createPaymentAttempts({ db, clock, repo: paymentsRepo, financing: loanFinancing, sender, logger });
  const checkout = createCheckout({
    db,
    clock,
    repo: paymentsRepo,
    router: paymentRouter,
    userWrite,
    events: paymentEvents,
    financing: loanFinancing,
    sender,
    attempts: paymentAttempts,
    mirror,
    // What a loan can draw now: the vault's room under its utilization cap and the loan book's daily funding bucket (D-107).
    pool: {
      lendableAssets: async () => {
        const [lendable, [, fundable]] = await Promise.all([
          stakingVault.getFunction("lendableAssets")() as Promise<bigint>,
          loanBook.loanBook.getFunction("fundingCapacity")() as Promise<[bigint, bigint]>,
        ]);
        // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.min does not take
        return lendable < fundable ? lendable : fundable;
      },
      minInterestOf: (borrower: string, principal: bigint) =>
        loanBook.loanBook.getFunction("minInterestOf")(borrower, principal) as Promise<bigint>,
    },
    production,
  });
  return { sender, relay: transactions, vault, payer, sandbox, mirror, loanBook, socialVault, payments, checkout, paymentAttempts };
}
