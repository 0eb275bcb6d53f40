import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { ROOT } from "./readme.js";
import { sharedService } from "./support.js";

// The packages as an app installs them (#44 item 5, D-112): both packed with `npm pack`, their
// tarballs installed in a fresh directory outside the repository (no workspace link), a merchant
// script and a React component type-checked there (strict; node16 and bundler resolution), and
// the script run against the service. Before D-112, @trustmint/react's tarball failed to install
// alone: it depended on @trustmint/sdk 0.1.0, which is not on the registry.

const rootManifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
/** The same versions the repository builds with, from npm's cache when it has them. */
const versionOf = (name: string) => `${name}@${rootManifest.devDependencies[name]}`;
const npm = (args: string[], cwd: string) =>
  execFileSync("npm", args, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, npm_config_fund: "false" },
  });

const MERCHANT = `import { ApiError, createClient, SDK_VERSION } from "@trustmint/sdk";
import { createPayments } from "@trustmint/sdk/payments";

const baseUrl = process.env.TRUSTMINT_URL ?? "http://127.0.0.1:3000";
const sandbox = createClient({ baseUrl });
const { accessToken } = await sandbox.sandbox.token({ sub: \`fresh-merchant-\${Date.now()}\` });
const client = createClient({ baseUrl, getToken: () => accessToken });
const me = await client.users.me();
await sandbox.sandbox.setPlan(me.id, { plan: "pro" });
const payments = createPayments({ baseUrl, getToken: () => accessToken });
const payment = await payments.createPayment({ amount: 12.5, description: "A lamp" });
try {
  await client.loans.get("00000000-0000-4000-8000-000000000000");
} catch (error) {
  if (!(error instanceof ApiError)) throw error;
  console.log(\`refused: \${error.status} \${error.code}\`);
}
console.log(\`sdk \${SDK_VERSION} user \${me.id} payment \${payment.status} \${payment.amount}\`);
`;

const COMPONENT = `import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { TrustMintProvider, type TrustMintHookError, useVaultDeposit, useVaultPosition } from "@trustmint/react";
import { ApiError, createClient } from "@trustmint/sdk";

function Savings() {
  const position = useVaultPosition();
  const deposit = useVaultDeposit();
  const error: TrustMintHookError | null = deposit.error;
  const code = error instanceof ApiError ? error.code : undefined;
  return (
    <div>
      <p>{position.data?.usdcValue ?? "..."}</p>
      <button type="button" onClick={() => deposit.mutate({ amount: 5 })}>Deposit</button>
      {code && <p role="alert">{code}</p>}
    </div>
  );
}

export function App({ token }: { token: string }) {
  const client = createClient({ baseUrl: "https://api.example.com", getToken: () => token });
  return (
    <QueryClientProvider client={new QueryClient()}>
      <TrustMintProvider client={client}>
        <Savings />
      </TrustMintProvider>
    </QueryClientProvider>
  );
}
`;

const tsconfig = (resolution: "node16" | "bundler") => ({
  compilerOptions: {
    strict: true,
    target: "es2022",
    module: resolution === "node16" ? "node16" : "esnext",
    moduleResolution: resolution,
    jsx: "react-jsx",
    lib: ["es2022", "dom"],
    types: ["node"],
    skipLibCheck: false,
    noEmit: resolution === "bundler",
    outDir: "out",
  },
  files: ["merchant.ts", "App.tsx"],
});

describe("the packed packages, installed in a fresh directory", function () {
  this.timeout(300_000);
  let app: string;

  before(() => {
    app = mkdtempSync(path.join(os.tmpdir(), "trustmint-app-"));
    for (const pkg of ["sdk", "react"]) npm(["pack", path.join(ROOT, "packages", pkg), "--pack-destination", app], ROOT);
  });
  after(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it("installs both tarballs alone, type-checks an app under node16 and bundler resolution, and runs a merchant's script", async () => {
    const tarballs = readdirSync(app).filter((file) => file.endsWith(".tgz"));
    expect(tarballs.sort()).to.deep.equal(["trustmint-react-0.1.0.tgz", "trustmint-sdk-0.1.0.tgz"]);
    writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "an-app", private: true, type: "module" }));
    npm(
      [
        "install",
        "--prefer-offline",
        "--no-audit",
        ...tarballs.map((file) => `./${file}`),
        versionOf("react"),
        versionOf("@tanstack/react-query"),
        versionOf("typescript"),
        versionOf("@types/react"),
        versionOf("@types/node"),
      ],
      app,
    );
    // Installed from the tarballs, not linked to the repository.
    const installed = JSON.parse(readFileSync(path.join(app, "node_modules/@trustmint/react/package.json"), "utf8"));
    expect(installed.peerDependencies["@trustmint/sdk"]).to.equal("^0.1.0");
    writeFileSync(path.join(app, "merchant.ts"), MERCHANT);
    writeFileSync(path.join(app, "App.tsx"), COMPONENT);
    const tsc = path.join(app, "node_modules/typescript/bin/tsc");
    for (const resolution of ["bundler", "node16"] as const) {
      writeFileSync(path.join(app, "tsconfig.json"), JSON.stringify(tsconfig(resolution)));
      try {
        execFileSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app, encoding: "utf8" });
      } catch (error) {
        throw new Error(`tsc (${resolution}): ${(error as { stdout?: string }).stdout}`);
      }
    }
    // node16 emitted the script: it runs against the service.
    const { url } = await sharedService();
    const output = execFileSync(process.execPath, [path.join(app, "out/merchant.js")], {
      cwd: app,
      encoding: "utf8",
      env: { ...process.env, TRUSTMINT_URL: url },
    });
    expect(output).to.match(/refused: 404 LOAN_NOT_FOUND/);
    expect(output).to.match(/sdk 0\.1\.0 user \S+ payment pending 12\.5/);
  });
});
