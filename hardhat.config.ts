import { createRequire } from "node:module";
import hardhatToolboxMochaEthersPlugin from "@nomicfoundation/hardhat-toolbox-mocha-ethers";
import { defineConfig } from "hardhat/config";

const require = createRequire(import.meta.url);

// The compiler download host is unreachable here: compile with the npm `solc`
// package (WASM), pinned to the same version in package.json.
const SOLC_VERSION = "0.8.28";
const compiler = (runs: number) => ({
  version: SOLC_VERSION,
  path: require.resolve("solc/soljson.js"),
  settings: { optimizer: { enabled: true, runs }, evmVersion: "cancun" },
});

export default defineConfig({
  plugins: [hardhatToolboxMochaEthersPlugin],
  solidity: {
    profiles: {
      default: {
        compilers: [compiler(200)],
        // The vault is near EIP-170's 24,576 bytes: fewer optimizer runs keep it under, for about 600 gas more per
        // deposit or redemption (docs/decisions.md D-126).
        overrides: { "contracts/vault/StakingVault.sol": compiler(50) },
      },
    },
  },
  paths: {
    tests: { mocha: "test/contracts", solidity: "test/contracts" },
  },
  networks: {
    // `npm run chain` and the embedded chain of `npm start` use this simulated network (the embedded
    // chain's copy is EMBEDDED_NETWORK in core/chain.ts; test/core/embedded-chain.test.ts keeps them equal).
    hardhat: {
      type: "edr-simulated",
      chainType: "l1",
      chainId: 31337,
      allowUnlimitedContractSize: false,
    },
    // A node or testnet reached by URL (`CHAIN_RPC_URL`).
    remote: {
      type: "http",
      chainType: "l1",
      url: process.env.CHAIN_RPC_URL ?? "http://127.0.0.1:8545",
      accounts: process.env.DEPLOYER_PRIVATE_KEY ? [process.env.DEPLOYER_PRIVATE_KEY] : [],
    },
  },
  test: {
    solidity: { fuzz: { runs: 256 } },
  },
});
