import { expect } from "chai";
import { ConfigError, HARDHAT_DEV_DEPLOYER_KEY, loadConfig } from "../../core/config.js";

function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration", () => {
  it("uses the embedded defaults when nothing is set", () => {
    const config = loadConfig({});
    expect(config.http).to.deep.equal({ host: "127.0.0.1", port: 3000 });
    expect(config.chain.mode).to.equal("embedded");
    expect(config.chain.rpcUrl).to.equal("http://127.0.0.1:8545");
    expect(config.chain.deployerPrivateKey).to.equal(HARDHAT_DEV_DEPLOYER_KEY);
    expect(config.database).to.deep.equal({ url: undefined, pgliteDir: ".data/pglite" });
    expect(config.loanFundingDelaySeconds).to.equal(60);
    expect(config.loanMinScore).to.equal(0);
    expect(loadConfig({ LOAN_MIN_SCORE: "10" }).loanMinScore).to.equal(10);
  });

  it("lets browser apps of any origin call /v1 by default, or only the origins named", () => {
    expect(loadConfig({}).corsOrigins).to.equal("*");
    expect(loadConfig({ CORS_ORIGINS: " https://app.example.com, http://localhost:5173 " }).corsOrigins).to.deep.equal([
      "https://app.example.com",
      "http://localhost:5173",
    ]);
  });

  it("switches to a remote chain and PostgreSQL by URL", () => {
    const config = loadConfig({ CHAIN_RPC_URL: "http://10.0.0.5:8545", DATABASE_URL: "postgresql://u:p@db:5432/app" });
    expect(config.chain.mode).to.equal("remote");
    expect(config.chain.rpcUrl).to.equal("http://10.0.0.5:8545");
    expect(config.database.url).to.equal("postgresql://u:p@db:5432/app");
  });

  for (const [name, value, expected] of [
    ["PORT", "abc", "config: PORT must be an integer between 1 and 65535"],
    ["PORT", "70000", "config: PORT must be an integer between 1 and 65535"],
    ["CHAIN_PORT", "0", "config: CHAIN_PORT must be an integer between 1 and 65535"],
    ["DATABASE_URL", "mysql://x", "config: DATABASE_URL must be a postgresql:// connection URL"],
    ["CHAIN_RPC_URL", "localhost:8545", "config: CHAIN_RPC_URL must be an http(s) URL"],
    ["DEPLOYER_PRIVATE_KEY", "0x1234", "config: DEPLOYER_PRIVATE_KEY must be a 0x-prefixed 32-byte hex private key"],
    ["CONFIRMATIONS", "-1", "config: CONFIRMATIONS must be a non-negative integer"],
    ["NODE_ENV", "staging", "config: NODE_ENV must be development, test or production"],
    ["LOAN_MIN_SCORE", "101", "config: LOAN_MIN_SCORE must be an integer from 0 to 100"],
    ["LOAN_MIN_SCORE", "-1", "config: LOAN_MIN_SCORE must be an integer from 0 to 100"],
    ["LOAN_MIN_SCORE", "5.5", "config: LOAN_MIN_SCORE must be an integer from 0 to 100"],
    ["LOAN_MIN_SCORE", "five", "config: LOAN_MIN_SCORE must be an integer from 0 to 100"],
    ["PUBLIC_BASE_URL", "https://api.example.com/", "config: PUBLIC_BASE_URL must be an http(s) URL without a trailing slash"],
    ["PUBLIC_BASE_URL", "api.example.com", "config: PUBLIC_BASE_URL must be an http(s) URL without a trailing slash"],
    ["WEBHOOK_SECRET_KEY", "c2hvcnQ=", "config: WEBHOOK_SECRET_KEY must be a 32-byte key in base64 or hex"],
    ["PUBLIC_BASE_URL", "https://api.example.com?x=1", "config: PUBLIC_BASE_URL must be an http(s) URL without a trailing slash"],
    ["CORS_ORIGINS", "https://app.example.com/", "config: CORS_ORIGINS must be * or a comma-separated list of origins"],
    ["CORS_ORIGINS", "app.example.com", "config: CORS_ORIGINS must be * or a comma-separated list of origins"],
    ["CORS_ORIGINS", "https://a.example.com,*", "config: CORS_ORIGINS must be * or a comma-separated list of origins"],
    ["CORS_ORIGINS", "https://a.example.com,,https://b.example.com", "config: CORS_ORIGINS must be * or a comma-separated list of origins"],
  ] as const) {
    it(`names ${name} when it is ${JSON.stringify(value)}`, () => {
      const message = configError({ [name]: value });
      expect(message).to.have.string(expected);
      expect(message).to.have.string(`(got ${JSON.stringify(value)})`);
      expect(message.split("\n")).to.have.length(1);
    });
  }

  it("refuses production without its overrides, naming them", () => {
    const message = configError({ NODE_ENV: "production" });
    expect(message).to.equal(
      "config: NODE_ENV=production needs CHAIN_RPC_URL, DEPLOYER_PRIVATE_KEY, DATABASE_URL, AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE, MANAGED_WALLET_MNEMONIC, SMTP_URL, WEBHOOK_SECRET_KEY, TREASURY_ADDRESS, OIDC_CLIENT_ID (the embedded defaults are for development only)",
    );
  });
});

describe("configuration: authentication defaults", () => {
  it("trusts the development identity provider of this process by default", () => {
    const config = loadConfig({ PORT: "4123" });
    expect(config.auth).to.deep.equal({
      jwksUrl: "http://127.0.0.1:4123/dev/.well-known/jwks.json",
      issuer: "http://127.0.0.1:4123/dev",
      audience: "trustmint-api",
      devProvider: true,
      devIssuer: "http://127.0.0.1:4123/dev",
    });
  });

  it("issues development tokens as PUBLIC_BASE_URL/dev, one issuer for every API process, and fetches the key set locally", () => {
    const config = loadConfig({ PORT: "4123", PUBLIC_BASE_URL: "https://api.example.com" });
    expect(config.auth).to.deep.equal({
      jwksUrl: "http://127.0.0.1:4123/dev/.well-known/jwks.json",
      issuer: "https://api.example.com/dev",
      audience: "trustmint-api",
      devProvider: true,
      devIssuer: "https://api.example.com/dev",
    });
    expect(loadConfig({ PUBLIC_BASE_URL: "http://10.0.0.5:8080/api" }).auth.devIssuer).to.equal("http://10.0.0.5:8080/api/dev");
    // A wildcard bind address: the default base URL is reached through the loopback interface.
    expect(loadConfig({ HOST: "0.0.0.0", PORT: "4123" }).auth.devIssuer).to.equal("http://127.0.0.1:4123/dev");
    // An explicit AUTH_ISSUER still wins over the development issuer.
    expect(loadConfig({ PUBLIC_BASE_URL: "https://api.example.com", AUTH_ISSUER: "https://idp.example/" }).auth.issuer).to.equal(
      "https://idp.example/",
    );
  });

  it("uses the external provider when it is configured", () => {
    const config = loadConfig({ AUTH_JWKS_URL: "https://idp.example/jwks", AUTH_ISSUER: "https://idp.example/", AUTH_AUDIENCE: "api" });
    expect(config.auth).to.include({ jwksUrl: "https://idp.example/jwks", issuer: "https://idp.example/", audience: "api" });
  });

  it("refuses a short MANAGED_WALLET_MNEMONIC", () => {
    expect(configError({ MANAGED_WALLET_MNEMONIC: "one two three" })).to.have.string(
      "config: MANAGED_WALLET_MNEMONIC must be a BIP-39 mnemonic of 12 or more words",
    );
  });
});
