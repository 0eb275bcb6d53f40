// The composition root of the domain: every service built once, every link between them wired
// here and nowhere else (the services that need a chain: services-chain.ts, called from here).
// `npm start`, `npm run api`, `npm run worker`, the tests and the benches all call
// servicesFromConfig (the configuration, and what the process adds to it); the API mounts routes
// on its result and the worker schedules jobs on it.

import { randomBytes } from "node:crypto";
import type { Clock } from "../core/clock.js";
import type { Config } from "../core/config.js";
import { createLogger, type Logger } from "../core/logger.js";
import { sharedSecret } from "../core/shared-secrets.js";
import { type ManagedWallets, managedWalletsFor } from "../core/wallets.js";
import { createApiKeysRepo } from "./api-keys/repo.js";
import { createApiKeysService } from "./api-keys/service.js";
import type { Db } from "./db.js";
import { createOutbox, type OutboxConsumer } from "./events/consumer.js";
import { createIdempotencyRepo } from "./idempotency/repo.js";
import { createJobQueue } from "./jobs/queue.js";
import { unprovenRoomOn } from "./loans/eligibility.js";
import { createLoanFinancing } from "./loans/financing.js";
import { createLoansReorgConsumer } from "./loans/reorg.js";
import { createLoansRepo } from "./loans/repo.js";
import { createLoansService } from "./loans/service.js";
import { createEmailSender } from "./notifications/channels/email.js";
import { createExpoPush } from "./notifications/channels/push.js";
import { createNotificationDeliveries, deliveryJobsOf } from "./notifications/deliveries.js";
import { createNotificationFanout } from "./notifications/fanout.js";
import { createNotificationFeed } from "./notifications/feed.js";
import { createNotificationsRepo } from "./notifications/repo.js";
import { createNotificationsService } from "./notifications/service.js";
import { createPaymentEvents } from "./payments/events.js";
import { createPaymentsRepo } from "./payments/repo.js";
import { createProcessPresence } from "./processes/presence.js";
import { createRewardsConsumer } from "./rewards/consumer.js";
import { type ChainDeps, createMoneyServices } from "./services-chain.js";
import { createSiweRepo } from "./siwe/repo.js";
import { createSiweService } from "./siwe/service.js";
import { signatureVerifier } from "./siwe/signatures.js";
import { createGuardianAlerts } from "./social-vault/alerts.js";
import { activeGuardiansOf, guardiansOfOwner } from "./social-vault/repo.js";
import { socialVaultExport } from "./social-vault/views.js";
import { createTrustScoreService } from "./trust-score/service.js";
import { createUsersRepo, eraseDueAccounts } from "./users/repo.js";
import { createUsersService } from "./users/service.js";
import { createVaultRepo } from "./vault/repo.js";
import { createWebhookDeliveries } from "./webhooks/deliveries.js";
import { createWebhookEgress, type Lookup } from "./webhooks/egress.js";
import { createWebhooksRepo } from "./webhooks/repo.js";
import { createSecretBox } from "./webhooks/secrets.js";
import { createWebhooksService } from "./webhooks/service.js";
import { createXpRepo } from "./xp/repo.js";
import { createXpService } from "./xp/service.js";

export interface ServiceDeps {
  db: Db;
  /** The service clock (shared across processes through the database). */
  clock: Pick<Clock, "now">;
  /** The users' managed wallets (provisioning derives an address per user). */
  wallets: Pick<ManagedWallets, "addressOf" | "signerOf">;
  /**
   * Serve user rows and badges from memory for a short time (service-clock TTL). API processes
   * do, for fast authenticated reads; a process that only writes (the worker) must not.
   */
  cacheReads: boolean;
  logger?: Pick<Logger, "warn" | "info">;
  /** The chain the service sends transactions on (services-chain.ts); processes that send nothing (the worker) leave it out. */
  chain?: ChainDeps;
  /** LOAN_FUNDING_DELAY_S: how old a loan request is before the pool funds it by itself (default 60). */
  loanFundingDelaySeconds?: number;
  /** LOAN_MIN_SCORE: the lowest Trust Score that may borrow (default 0: every tier, New included). */
  loanMinScore?: number;
  /**
   * Where notifications leave the platform (config `notifications`): SMTP (none: e-mails go to the
   * log) and Expo's push API. Default: no SMTP server, Expo's public API.
   */
  notificationChannels?: { smtpUrl: string | undefined; emailFrom: string; expoPushUrl: string; expoAccessToken: string | undefined };
  /** What this process is (api, worker, start): its row among the live processes says so. */
  processKind?: string;
  /**
   * Webhooks: the key sealing their secrets (config WEBHOOK_SECRET_KEY; undefined: the database's
   * shared development key), whether production rules apply to their URLs, and the resolver of
   * their hosts (tests give their own). Default: development, the system resolver.
   */
  webhooks?: { secretKey: Buffer | undefined; production: boolean; lookup?: Lookup };
  /** The address clients reach the API at (PUBLIC_BASE_URL): payments' checkout URLs start with it. */
  publicBaseUrl?: string;
  /** The origins whose apps may sign users in with their wallets (SIWE): any ("*", outside production only) or a list. */
  siweOrigins?: "*" | readonly string[];
}

export function createServices({
  db,
  clock,
  wallets,
  cacheReads,
  logger,
  chain,
  loanFundingDelaySeconds = 60,
  loanMinScore = 0,
  notificationChannels = {
    smtpUrl: undefined,
    emailFrom: "TrustMint <no-reply@trustmint.local>",
    expoPushUrl: "https://exp.host/--/api/v2/push/send",
    expoAccessToken: undefined,
  },
  processKind = "api",
  webhooks: webhookConfig = { secretKey: undefined, production: false },
  publicBaseUrl = "http://127.0.0.1:3000",
  siweOrigins = [new URL(publicBaseUrl).origin],
}: ServiceDeps) {
  const cacheClock = cacheReads ? clock : undefined;
  // This process among the live ones: what it holds is taken over as soon as it dies.
  const presence = createProcessPresence({ db, kind: processKind, logger });
  // The one queue of background work: enqueued from any process, run by the workers' runners.
  const jobs = createJobQueue({ db, clock, presence });
  // The outbox's consumers run as page jobs of that queue (domain/events/consumer.ts).
  const outbox = createOutbox({ db, jobs, logger: logger ?? createLogger("warn", "outbox") });
  const usersRepo = createUsersRepo({ db, clock: cacheClock });
  const xpRepo = createXpRepo({ db, clock: cacheClock });
  const vaultRepo = createVaultRepo({ db });
  const loansRepo = createLoansRepo({ db, presence });
  const apiKeysRepo = createApiKeysRepo({ db });
  /** Drops this process's cached row and badges of a user; called after committing a write to them. */
  const invalidateUser = (userId: string) => {
    usersRepo.invalidate(userId);
    xpRepo.invalidate(userId);
  };

  const trust = createTrustScoreService({ db, clock, users: usersRepo });
  const xp = createXpService({
    db,
    clock,
    repo: xpRepo,
    users: usersRepo,
    invalidateUser,
    // The level bonus of the Trust Score follows the XP level.
    onLevelChange: (tx, userId, reason) => trust.recomputeTrustScore(tx, userId, reason),
  });
  const users = createUsersService({
    repo: usersRepo,
    apiKeys: apiKeysRepo,
    wallets,
    clock,
    xp,
    loans: loansRepo,
    vault: vaultRepo,
    guardiansOf: (wallet, now) => guardiansOfOwner(db.prisma, wallet, now),
    socialVaultOf: (wallet, now) => socialVaultExport(db, wallet, now),
  });
  const apiKeys = createApiKeysService({ repo: apiKeysRepo, users: usersRepo, clock });
  const rewards = createRewardsConsumer({ xp, trust, invalidateUser, outbox });
  // The in-app feed, preferences and push devices; each written notification's push and e-mail
  // are queued in the transaction that wrote it (held to the end of the user's quiet hours).
  const notificationsRepo = createNotificationsRepo({ db });
  const notifications = createNotificationsService({
    db,
    clock,
    repo: notificationsRepo,
    deliver: async (written, tx) => {
      await jobs.enqueueMany(deliveryJobsOf(written), tx);
    },
    users: usersRepo,
    activeGuardiansOf,
  });
  const guardianAlerts = createGuardianAlerts({ outbox, logger });
  const paymentsRepo = createPaymentsRepo({ db, presence });
  // Who may borrow: LOAN_MIN_SCORE, and the loan book's limits on unproven borrowers where a chain is (D-125).
  const credit = { minScore: loanMinScore, unprovenRoom: chain && unprovenRoomOn(chain) };
  const loanFinancing = createLoanFinancing({ db, repo: loansRepo, clock, chainId: chain?.chainId ?? 0, ...credit });
  const paymentEvents = createPaymentEvents({ outbox, repo: paymentsRepo, financing: loanFinancing });
  const email = createEmailSender({ smtpUrl: notificationChannels.smtpUrl, from: notificationChannels.emailFrom, logger });
  // The services that send transactions, built only where the process has a chain.
  const onChain = chain
    ? createMoneyServices(chain, {
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
        production: webhookConfig.production,
        publicBaseUrl,
      })
    : undefined;
  const loans = createLoansService({
    db,
    clock,
    repo: loansRepo,
    xp,
    invalidateUser,
    logger,
    chain: onChain?.loanBook,
    fundingDelaySeconds: loanFundingDelaySeconds,
    ...credit,
  });

  // Webhook secrets are sealed with the configured key, or (outside production) a key every
  // process on this database shares, made by the first that needs it.
  const webhookSecrets = createSecretBox(
    async () =>
      webhookConfig.secretKey ??
      Buffer.from(await sharedSecret(db, "webhook-secret-key", () => randomBytes(32).toString("base64")), "base64"),
  );
  const webhookEgress = createWebhookEgress({ production: webhookConfig.production, lookup: webhookConfig.lookup });
  const webhooksRepo = createWebhooksRepo({ db });
  const webhooks = createWebhooksService({
    repo: webhooksRepo,
    secrets: webhookSecrets,
    egress: webhookEgress,
    clock,
    production: webhookConfig.production,
  });

  // Sign-In with Ethereum: a contract wallet's signature is checked on the chain.
  const siwe =
    chain &&
    createSiweService({
      repo: createSiweRepo({ db }),
      clock,
      chainId: chain.chainId,
      allowsOrigin: (origin) => siweOrigins === "*" || siweOrigins.includes(origin),
      verifySignature: signatureVerifier(chain.provider),
      async accountOf(address) {
        const user = await users.ownWalletAccount(address);
        // What the wallet did on the platform's contracts before it signed in is its account's, once (D-119):
        // asked at every sign-in, so that a sign-in stopped between the account and this finds it next time.
        await rewards.adopt(clock.now(), user.id, address);
        return user;
      },
      users,
      holdsLoans: async (userId, wallet) => {
        const standing = await loansRepo.standing(db.prisma, userId, wallet, clock.now());
        return standing.openLoans > 0 || standing.overdue || standing.lastDefaultAt !== null;
      },
      adopt: (userId, wallet) => rewards.adopt(clock.now(), userId, wallet),
    });

  const webhookDeliveries = createWebhookDeliveries({ db, repo: webhooksRepo, webhooks, jobs, clock, logger });
  const notificationFanout = createNotificationFanout({ db, notifications, jobs, repo: notificationsRepo, activeGuardiansOf });

  return {
    /** First answers of writes per (user, Idempotency-Key). */
    idempotency: createIdempotencyRepo({
      db,
      presence,
      // Without the chain's answer (a node down) the kept answer stands, as it did before the reorg.
      followChain: onChain
        ? () =>
            onChain.relay.restore().then(
              (removed) => removed > 0,
              (error: Error) => {
                logger?.warn({ error: error.message }, "could not check the chain before a replay");
                return false;
              },
            )
        : undefined,
    }),
    /** This process's heartbeat (stop it when the process stops, so what it held is free at once). */
    presence,
    /** Ends what the services hold open: the SMTP connections, then this process's heartbeat (its held work is taken over at once). */
    async stop() {
      email.close();
      await webhookEgress.close();
      await presence.stop();
    },
    /** The job queue (domain/jobs/): enqueue background work, in a caller's transaction if need be. */
    jobs,
    /** The outbox's consumers on the job queue: the producer of their page jobs, and `take` and `drain`. */
    outbox,
    /** Every consumer of the outbox, for the worker's producer and the runners of their page jobs. */
    outboxConsumers: [
      ...rewards.consumers,
      guardianAlerts.consumer,
      paymentEvents.consumer,
      notificationFanout.consumer,
      webhookDeliveries.consumer,
      createLoansReorgConsumer({ repo: loansRepo, invalidateUser }),
    ] as readonly OutboxConsumer[],
    users,
    apiKeys,
    xp,
    trust,
    rewards,
    /** Users' notifications: the feed, preferences, push devices, and `notify` (every notification's one path). */
    notifications,
    /** New in-app notifications as they are written, for the live stream (one poller per process, while anyone listens). */
    notificationFeed: createNotificationFeed({ repo: notificationsRepo, logger }),
    /** The outbox consumer that turns domain events into notifications and their delivery jobs. */
    notificationFanout,
    /** The delivery jobs' work: push through Expo, e-mail over SMTP. */
    notificationDeliveries: createNotificationDeliveries({
      repo: notificationsRepo,
      push: createExpoPush({ url: notificationChannels.expoPushUrl, accessToken: notificationChannels.expoAccessToken }),
      email,
      logger,
    }),
    /** Users' webhooks: subscriptions, the deliveries log, and `deliver` (every attempt's one path). */
    webhooks,
    /** The outbox consumer that turns domain events into webhook delivery jobs, and the jobs' attempts. */
    webhookDeliveries,
    /** The guardians' silent alerts of locks (social_vault.guardian_alert), from the mirrored locks. */
    guardianAlerts,
    /** The merchants' payment.success and payment.refunded, from the mirrored payments and refunds. */
    paymentEvents,
    /** Merchants' payments, the merchant's side (absent in processes without a chain). */
    payments: onChain?.payments,
    /** The hosted checkout, the payer's side: what a payment costs them and paying it (absent without a chain). */
    checkout: onChain?.checkout,
    /** How payers' attempts end: the job that settles attempts on credit that stopped (absent without a chain). */
    paymentAttempts: onChain?.paymentAttempts,
    /** The hosted checkout's sign-ins under way (api/checkout/sign-in.ts keeps them here). */
    checkoutSignIns: paymentsRepo as Pick<typeof paymentsRepo, "startSignIn" | "takeSignIn">,
    /** The one sender of the service's transactions (absent in processes without a chain). */
    sender: onChain?.sender,
    /** The relay of users' own transactions in batches (absent in processes without a chain). */
    relay: onChain?.relay,
    /** Writes' wait for the mirror (read-your-writes; attachIndexer joins an indexer of this process). */
    mirror: onChain?.mirror,
    /** Sign-In with Ethereum: the accounts of wallets their users hold (absent in processes without a chain). */
    siwe,
    /** Loans for borrowers; funding needs a chain (the job and the sandbox's /dev/loans/{loanId}/fund). */
    loans,
    /** Whether this process can fund loans (it has the pool's operator on a chain). */
    fundsLoans: onChain !== undefined,
    /** Each user's social vault (absent in processes without a chain). */
    socialVault: onChain?.socialVault,
    /** The staking vault for users (absent in processes without a chain). */
    vault: onChain?.vault,
    /** The paying account's balance against its floor (/health; absent without a chain). */
    payer: onChain?.payer,
    /** The money sandbox (absent without a chain; the API mounts it outside production only). */
    sandbox: onChain?.sandbox,
    invalidateUser,
    /** The erase job (personal data of accounts past their deletion date); returns the ids erased. */
    async eraseDueAccounts(now: Date): Promise<string[]> {
      const erased = await eraseDueAccounts(db, now);
      for (const id of erased) invalidateUser(id);
      return erased;
    },
  };
}

export type Services = ReturnType<typeof createServices>;

/** What a process adds to its configuration to build its services. */
export interface ProcessDeps {
  db: ServiceDeps["db"];
  clock: ServiceDeps["clock"];
  logger?: ServiceDeps["logger"];
  /** What this process is (api, worker, start): its row among the live processes says so. */
  processKind: string;
  /** Cached reads: API processes; never a process that only writes (see ServiceDeps.cacheReads). */
  cacheReads: boolean;
  /** The chain this process sends transactions on and its deployment; absent: it sends nothing. */
  chain?: Pick<NonNullable<ServiceDeps["chain"]>, "provider" | "chainId" | "deployment" | "mirrorWaitMs">;
  /** Tests only: wallets of their own (default: the configuration's managed wallets). */
  wallets?: ServiceDeps["wallets"];
  /** Tests only: the webhooks' host resolver. */
  webhookLookup?: Lookup;
}

/** The services of a process, from the configuration (core/config.ts) and what the process holds. */
export async function servicesFromConfig(config: Config, deps: ProcessDeps): Promise<Services> {
  return createServices({
    db: deps.db,
    clock: deps.clock,
    logger: deps.logger,
    wallets: deps.wallets ?? (await managedWalletsFor(config, deps.db)),
    cacheReads: deps.cacheReads,
    processKind: deps.processKind,
    chain: deps.chain && {
      ...deps.chain,
      operatorKey: config.chain.deployerPrivateKey,
      mockUsdc: config.chain.usdcAddress === undefined,
      payerLowBalanceWei: config.chain.payerLowBalanceWei,
      replaceAfterMs: config.chain.replaceAfterMs,
    },
    loanFundingDelaySeconds: config.loanFundingDelaySeconds,
    loanMinScore: config.loanMinScore,
    notificationChannels: config.notifications,
    webhooks: { secretKey: config.webhooks.secretKey, production: config.isProduction, lookup: deps.webhookLookup },
    publicBaseUrl: config.publicBaseUrl,
    // Apps may sign in from the origins that may call the API, and the hosted checkout's own; any
    // origin only outside production while CORS_ORIGINS is "*".
    siweOrigins:
      config.corsOrigins === "*"
        ? config.isProduction
          ? [new URL(config.publicBaseUrl).origin]
          : "*"
        : [...config.corsOrigins, new URL(config.publicBaseUrl).origin],
  });
}
