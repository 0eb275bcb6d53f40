import { expect } from "chai";
import { Contract, ContractFactory, JsonRpcProvider } from "ethers";
import { EMBEDDED_NETWORK, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { loadArtifact } from "../../core/deployments.js";
import hardhatConfig from "../../hardhat.config.js";
import { freePort } from "../helpers/stack.js";

describe("the embedded chain", () => {
  it("runs the network of hardhat.config.ts (`npm run chain`), which its thread does not load", () => {
    expect(hardhatConfig.networks?.hardhat).to.deep.equal(EMBEDDED_NETWORK);
  });

  describe("served as JSON-RPC", () => {
    let chain: EmbeddedChain;
    let provider: JsonRpcProvider;

    before(async () => {
      chain = await startEmbeddedChain("127.0.0.1", await freePort());
      provider = new JsonRpcProvider(chain.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
    });

    after(async () => {
      provider?.destroy();
      await chain?.close();
    });

    it("offers Hardhat's 20 funded development accounts", async () => {
      const accounts = (await provider.send("eth_accounts", [])) as string[];
      expect(accounts).to.have.length(20);
      expect(await provider.getBalance(accounts[0]!)).to.be.greaterThan(0n);
    });

    it("answers a revert with code 3 and the custom error's data, which ethers decodes", async () => {
      const artifact = loadArtifact("mocks/MockUSDC.sol", "MockUSDC");
      const owner = await provider.getSigner(0);
      const deployed = await new ContractFactory(artifact.abi as never, artifact.bytecode, owner).deploy(await owner.getAddress());
      await deployed.waitForDeployment();
      const token = new Contract(await deployed.getAddress(), artifact.abi as never, await provider.getSigner(1));
      const error = await token
        .getFunction("transfer")(await owner.getAddress(), 5n)
        .then(
          () => null,
          (caught: unknown) => caught,
        );
      expect(error).to.include({ code: "CALL_EXCEPTION" });
      const data = (error as { data?: string }).data!;
      expect(token.interface.parseError(data)?.name).to.equal("ERC20InsufficientBalance");
    });
  });
});
