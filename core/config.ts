import { isIP } from "node:net";
import { z } from "zod";

// All configuration, read once from the environment and validated at start.
// A bad value stops the process with one line naming the variable.

/** Hardhat's well-known account #0: the deployer on local chains (never in production). */
export const HARDHAT_DEV_DEPLOYER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/** `aud` of the development identity provider's tokens, and the default AUTH_AUDIENCE. */
export const DEFAULT_AUDIENCE = "trustmint-api";

const port = (fallback: number) =>
  z.coerce
    .number({ error: "must be an integer between 1 and 65535" })
    .int("must be an integer between 1 and 65535")
    .min(1, "must be an integer between 1 and 65535")
    .max(65535, "must be an integer between 1 and 65535")
    .default(fallback);

const optionalString = z
  .string()
  .trim()
  .transform((value) => (value === "" ? undefined : value))
  .optional();

const httpUrl = (what: string) =>
  optionalString.refine((value) => value === undefined || /^https?:\/\/[^\s]+$/.test(value), {
    message: `must be an http(s) URL (${what})`,
  });

/** An http(s) URL with no trailing slash, query or fragment: paths are appended to it. */
function isBaseUrl(value: string): boolean {
  if (!/^https?:\/\/[^\s]+$/.test(value) || value.endsWith("/") || !URL.canParse(value)) return false;
  const url = new URL(value);
  return url.search === "" && url.hash === "";
}

/** CORS_ORIGINS: "*" (any origin), or the origins a browser app may call /v1 from; null when malformed. */
export function parseCorsOrigins(value: string): "*" | string[] | null {
  if (value === "*") return "*";
  const origins = value.split(",").map((entry) => entry.trim());
  const isOrigin = (entry: string) => /^https?:\/\//.test(entry) && URL.canParse(entry) && new URL(entry).origin === entry;
  return origins.length > 0 && origins.every(isOrigin) ? origins : null;
}

/** A 32-byte key from base64 or hex text (WEBHOOK_SECRET_KEY), or null when it is not one. */
export function parseSecretKey(text: string): Buffer | null {
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
  return key.length === 32 ? key : null;
}

const envSchema = z.object({
  NODE_ENV: z.enum(["development", "test", "production"], { error: "must be development, test or production" }).default("development"),
  HOST: z.string().default("127.0.0.1"),
  PORT: port(3000),
  PUBLIC_BASE_URL: optionalString.refine((value) => value === undefined || isBaseUrl(value), {
    message: "must be an http(s) URL without a trailing slash (the address clients reach the API at)",
  }),
  CHAIN_PORT: port(8545),
  CHAIN_RPC_URL: httpUrl("a JSON-RPC endpoint such as http://127.0.0.1:8545"),
  DEPLOYER_PRIVATE_KEY: optionalString.refine((value) => value === undefined || /^0x[0-9a-fA-F]{64}$/.test(value), {
    message: "must be a 0x-prefixed 32-byte hex private key",
  }),
  USDC_ADDRESS: optionalString.refine((value) => value === undefined || /^0x[0-9a-fA-F]{40}$/.test(value), {
    message: "must be a 0x-prefixed 20-byte address",
  }),
  OIDC_CLIENT_ID: optionalString,
  OIDC_CLIENT_SECRET: optionalString,
  OIDC_ISSUER: httpUrl("the identity provider's issuer (its /.well-known/openid-configuration is read)"),
  TREASURY_ADDRESS: optionalString.refine((value) => value === undefined || /^0x[0-9a-fA-F]{40}$/.test(value), {
    message: "must be a 0x-prefixed 20-byte address",
  }),
  ADMIN_ADDRESS: optionalString.refine((value) => value === undefined || /^0x[0-9a-fA-F]{40}$/.test(value), {
    message: "must be a 0x-prefixed 20-byte address (the timelock's admin: a multisig)",
  }),
  ADMIN_TIMELOCK_DELAY: z.coerce
    .number({ error: "must be a whole number of seconds from 0 to 2592000 (30 days)" })
    .int("must be a whole number of seconds from 0 to 2592000 (30 days)")
    .min(0, "must be a whole number of seconds from 0 to 2592000 (30 days)")
    .max(30 * 24 * 3600, "must be a whole number of seconds from 0 to 2592000 (30 days)")
    .default(2 * 24 * 3600),
  DATABASE_URL: optionalString.refine((value) => value === undefined || /^postgres(ql)?:\/\/.+/.test(value), {
    message: "must be a postgresql:// connection URL",
  }),
  DATA_DIR: z.string().min(1).default(".data"),
  AUTH_JWKS_URL: httpUrl("the identity provider's JWKS"),
  AUTH_ISSUER: optionalString,
  AUTH_AUDIENCE: optionalString,
  MANAGED_WALLET_MNEMONIC: optionalString.refine((value) => value === undefined || value.split(/\s+/).length >= 12, {
    message: "must be a BIP-39 mnemonic of 12 or more words",
  }),
  TX_REPLACE_AFTER_MS: z.coerce
    .number({ error: "must be an integer number of milliseconds" })
    .int()
    .min(100, "must be at least 100 (ms)")
    .max(3_600_000, "must be at most 3600000 (ms)")
    .default(20_000),
  PAYER_LOW_BALANCE_WEI: z
    .string()
    .regex(/^\d{1,30}$/, "must be a whole number of wei in decimal digits")
    .default("100000000000000000")
    .transform(BigInt),
  SMTP_URL: optionalString.refine((value) => value === undefined || /^smtps?:\/\/.+/.test(value), {
    message: "must be an smtp:// or smtps:// URL (user and password in it where the server needs them)",
  }),
  EMAIL_FROM: z.string().min(3).default("TrustMint <no-reply@trustmint.local>"),
  EXPO_PUSH_URL: z
    .string()
    .default("https://exp.host/--/api/v2/push/send")
    .refine((value) => /^https?:\/\/\S+$/.test(value), { message: "must be an http(s) URL (Expo's push API, or a stand-in)" }),
  EXPO_ACCESS_TOKEN: optionalString,
  WEBHOOK_SECRET_KEY: optionalString.refine((value) => value === undefined || parseSecretKey(value) !== null, {
    message: "must be a 32-byte key in base64 or hex (openssl rand -base64 32)",
  }),
  REDIS_URL: optionalString.refine((value) => value === undefined || /^rediss?:\/\/.+/.test(value), {
    message: "must be a redis:// URL",
  }),
  CONFIRMATIONS: z.coerce.number({ error: "must be a non-negative integer" }).int().min(0, "must be a non-negative integer").default(0),
  INDEXER_POLL_MS: z.coerce
    .number({ error: "must be an integer number of milliseconds" })
    .int()
    .min(10, "must be at least 10 (ms)")
    .max(60_000, "must be at most 60000 (ms)")
    .default(100),
  INDEXER_MAX_BLOCK_RANGE: z.coerce
    .number({ error: "must be a positive integer" })
    .int()
    .min(1, "must be a positive integer")
    .default(10_000),
  LOAN_FUNDING_DELAY_S: z.coerce
    .number({ error: "must be a non-negative integer" })
    .int()
    .min(0, "must be a non-negative integer")
    .default(60),
  LOAN_MIN_SCORE: z.coerce
    .number({ error: "must be an integer from 0 to 100 (a Trust Score)" })
    .int("must be an integer from 0 to 100 (a Trust Score)")
    .min(0, "must be an integer from 0 to 100 (a Trust Score)")
    .max(100, "must be an integer from 0 to 100 (a Trust Score)")
    .default(0),
  CORS_ORIGINS: z
    .string()
    .trim()
    .default("*")
    .transform((value, context) => {
      const parsed = parseCorsOrigins(value);
      if (parsed === null) {
        context.addIssue({
          code: "custom",
          message: "must be * or a comma-separated list of origins such as https://app.example.com (scheme, host and port only)",
        });
        return z.NEVER;
      }
      return parsed;
    }),
  TRUST_PROXY: z
    .string()
    .trim()
    .default("loopback")
    .transform((value, context) => {
      const parsed = parseTrustProxy(value);
      if (parsed === null) {
        context.addIssue({
          code: "custom",
          message:
            "must be false, true, a hop count, or a comma-separated list of IP addresses, CIDR ranges and the names loopback, linklocal, uniquelocal",
        });
        return z.NEVER;
      }
      return parsed;
    }),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], { error: "must be a pino level" }).default("info"),
});

export type Env = z.infer<typeof envSchema>;

/** Express's `trust proxy` value: whom to believe about the client address in X-Forwarded-For. */
export type TrustProxy = boolean | number | string[];

const PROXY_NAMES = new Set(["loopback", "linklocal", "uniquelocal"]);

/** TRUST_PROXY as Express takes it, or null when malformed (checked here: Express would fail at the first request). */
export function parseTrustProxy(value: string): TrustProxy | null {
  if (value === "false" || value === "") return false;
  if (value === "true") return true;
  if (/^\d{1,2}$/.test(value)) return Number(value);
  const entries = value.split(",").map((entry) => entry.trim());
  const valid = entries.every((entry) => {
    if (PROXY_NAMES.has(entry)) return true;
    const [address, bits, ...rest] = entry.split("/");
    const family = isIP(address ?? "");
    if (family === 0 || rest.length > 0) return false;
    if (bits === undefined) return true;
    if (!/^\d{1,3}$/.test(bits)) return false;
    return Number(bits) <= (family === 4 ? 32 : 128);
  });
  return valid ? entries : null;
}

export interface Config {
  env: Env["NODE_ENV"];
  isProduction: boolean;
  http: { host: string; port: number };
  /** The address clients reach the API at (PUBLIC_BASE_URL, else this process's own): checkout URLs start with it. */
  publicBaseUrl: string;
  chain: {
    /** Embedded: the in-process EDR chain served on `embeddedPort`. */
    mode: "embedded" | "remote";
    rpcUrl: string;
    embeddedPort: number;
    deployerPrivateKey: string;
    usdcAddress: string | undefined;
    /** Where payment fees go; undefined outside production means the deployer's address. */
    treasuryAddress: string | undefined;
    /** The timelock's admin (ADMIN_ADDRESS): deploying in production needs it; elsewhere the deployer. */
    adminAddress: string | undefined;
    timelockDelaySeconds: number;
    confirmations: number;
    /** Below this the paying account is reported low (/health and a warning). */
    payerLowBalanceWei: bigint;
    /** A sent transaction unmined this long is replaced with higher fees. */
    replaceAfterMs: number;
  };
  indexer: {
    /** How often the head is polled once the backfill is done. */
    pollMs: number;
    /** Upper bound of one eth_getLogs block range (the range adapts below it). */
    maxBlockRange: number;
  };
  database: { url: string | undefined; pgliteDir: string };
  dataDir: string;
  auth: {
    jwksUrl: string;
    issuer: string;
    audience: string;
    /** The development identity provider (/dev/token, /dev JWKS) is served; never in production. */
    devProvider: boolean;
    /** `iss` of the development provider's tokens: `${PUBLIC_BASE_URL}/dev`. */
    devIssuer: string;
  };
  /** Seed of the managed wallets; undefined outside production means "generate once under DATA_DIR". */
  managedWalletMnemonic: string | undefined;
  redisUrl: string | undefined;
  /** Proxies whose X-Forwarded-For is believed (Express `trust proxy`); the client address keys anonymous rate limits. */
  trustProxy: TrustProxy;
  /** The origins a browser app may call /v1 from (CORS_ORIGINS): "*" by default. */
  corsOrigins: "*" | string[];
  loanFundingDelaySeconds: number;
  /** LOAN_MIN_SCORE: below this Trust Score a user may not borrow (SCORE_TOO_LOW); 0 lets tier New borrow. */
  loanMinScore: number;
  notifications: {
    /** SMTP server of e-mail notifications; without it (never in production) e-mails go to the log. */
    smtpUrl: string | undefined;
    emailFrom: string;
    /** Expo's push API (a local receiver in tests) and its optional access token. */
    expoPushUrl: string;
    expoAccessToken: string | undefined;
  };
  webhooks: {
    /** Seals webhook secrets at rest (AES-256-GCM); undefined outside production means the database's shared development key. */
    secretKey: Buffer | undefined;
  };
  /**
   * The hosted checkout's sign-in at the identity provider (OpenID Connect, authorization code
   * with PKCE): its issuer (AUTH_ISSUER unless OIDC_ISSUER), this service's client id there, and
   * a secret for a confidential client. Absent client id: no sign-in (outside production the
   * sandbox form takes a /dev/token instead).
   */
  checkout: { oidcIssuer: string; oidcClientId: string | undefined; oidcClientSecret: string | undefined };
  logLevel: Env["LOG_LEVEL"];
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses the environment; throws a ConfigError whose message is one line per bad variable. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(environment);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? "environment");
      const raw = environment[name];
      return `config: ${name} ${issue.message}${raw === undefined ? "" : ` (got ${JSON.stringify(raw)})`}`;
    });
    throw new ConfigError(lines.join("\n"));
  }
  const env = parsed.data;
  const isProduction = env.NODE_ENV === "production";

  if (isProduction) {
    const missing = (
      [
        "CHAIN_RPC_URL",
        "DEPLOYER_PRIVATE_KEY",
        "DATABASE_URL",
        "AUTH_JWKS_URL",
        "AUTH_ISSUER",
        "AUTH_AUDIENCE",
        "MANAGED_WALLET_MNEMONIC",
        "SMTP_URL",
        "WEBHOOK_SECRET_KEY",
        "TREASURY_ADDRESS",
        "OIDC_CLIENT_ID",
      ] as const
    ).filter((name) => env[name] === undefined);
    if (missing.length > 0) {
      throw new ConfigError(`config: NODE_ENV=production needs ${missing.join(", ")} (the embedded defaults are for development only)`);
    }
    if (env.ADMIN_TIMELOCK_DELAY < 24 * 3600) {
      throw new ConfigError(
        "config: NODE_ENV=production needs ADMIN_TIMELOCK_DELAY of at least 86400 (a day for depositors to see a change coming)",
      );
    }
  }

  // The development identity provider's key set is fetched from this process itself (every
  // process on the database has the same key); a wildcard bind address is reached through the
  // loopback interface.
  const selfHost = env.HOST === "0.0.0.0" || env.HOST === "::" ? "127.0.0.1" : env.HOST;
  const selfUrl = `http://${selfHost.includes(":") ? `[${selfHost}]` : selfHost}:${env.PORT}`;
  // Its issuer is the address clients reach: one for all the API processes behind a load
  // balancer, so that a token one of them issued is accepted by the others.
  const devIssuer = `${env.PUBLIC_BASE_URL ?? selfUrl}/dev`;

  return {
    env: env.NODE_ENV,
    isProduction,
    http: { host: env.HOST, port: env.PORT },
    publicBaseUrl: env.PUBLIC_BASE_URL ?? selfUrl,
    chain: {
      mode: env.CHAIN_RPC_URL ? "remote" : "embedded",
      rpcUrl: env.CHAIN_RPC_URL ?? `http://127.0.0.1:${env.CHAIN_PORT}`,
      embeddedPort: env.CHAIN_PORT,
      deployerPrivateKey: env.DEPLOYER_PRIVATE_KEY ?? HARDHAT_DEV_DEPLOYER_KEY,
      usdcAddress: env.USDC_ADDRESS,
      treasuryAddress: env.TREASURY_ADDRESS,
      adminAddress: env.ADMIN_ADDRESS,
      timelockDelaySeconds: env.ADMIN_TIMELOCK_DELAY,
      confirmations: env.CONFIRMATIONS,
      payerLowBalanceWei: env.PAYER_LOW_BALANCE_WEI,
      replaceAfterMs: env.TX_REPLACE_AFTER_MS,
    },
    indexer: { pollMs: env.INDEXER_POLL_MS, maxBlockRange: env.INDEXER_MAX_BLOCK_RANGE },
    database: { url: env.DATABASE_URL, pgliteDir: `${env.DATA_DIR}/pglite` },
    dataDir: env.DATA_DIR,
    auth: {
      jwksUrl: env.AUTH_JWKS_URL ?? `${selfUrl}/dev/.well-known/jwks.json`,
      issuer: env.AUTH_ISSUER ?? devIssuer,
      audience: env.AUTH_AUDIENCE ?? DEFAULT_AUDIENCE,
      devProvider: !isProduction,
      devIssuer,
    },
    managedWalletMnemonic: env.MANAGED_WALLET_MNEMONIC,
    redisUrl: env.REDIS_URL,
    trustProxy: env.TRUST_PROXY,
    corsOrigins: env.CORS_ORIGINS,
    loanFundingDelaySeconds: env.LOAN_FUNDING_DELAY_S,
    loanMinScore: env.LOAN_MIN_SCORE,
    notifications: {
      smtpUrl: env.SMTP_URL,
      emailFrom: env.EMAIL_FROM,
      expoPushUrl: env.EXPO_PUSH_URL,
      expoAccessToken: env.EXPO_ACCESS_TOKEN,
    },
    webhooks: { secretKey: env.WEBHOOK_SECRET_KEY === undefined ? undefined : parseSecretKey(env.WEBHOOK_SECRET_KEY)! },
    checkout: {
      oidcIssuer: env.OIDC_ISSUER ?? env.AUTH_ISSUER ?? devIssuer,
      oidcClientId: env.OIDC_CLIENT_ID,
      oidcClientSecret: env.OIDC_CLIENT_SECRET,
    },
    logLevel: env.LOG_LEVEL,
  };
}
