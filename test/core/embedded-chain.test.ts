import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import { Contract, ContractFactory, JsonRpcProvider } from "ethers";
import { ChainUnavailableError, connectRpc, EMBEDDED_NETWORK, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
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

describe("connectRpc", () => {
  /** A JSON-RPC endpoint that drops the connection of its first `drops` requests without an answer, then answers eth_chainId. */
  async function endpoint(drops: number) {
    let asked = 0;
    const server = createServer((req, res) => {
      asked += 1;
      if (asked <= drops) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: "0x7a69" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      asked: () => asked,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  it("asks once more when the node closes the connection without an answer (a kept-alive socket it timed out)", async () => {
    const rpc = await endpoint(1);
    try {
      const { provider, chainId } = await connectRpc(rpc.url);
      provider.destroy();
      expect(chainId).to.equal(31337);
      expect(rpc.asked()).to.equal(2);
    } finally {
      await rpc.close();
    }
  });

  it("says the endpoint is unreachable when it closes the connection again", async () => {
    const rpc = await endpoint(2);
    try {
      let failure: unknown = null;
      await connectRpc(rpc.url).catch((error) => {
        failure = error;
      });
      expect(failure).to.be.instanceOf(ChainUnavailableError);
      expect((failure as Error).message).to.match(/cannot reach the JSON-RPC endpoint .* \((UND_ERR_SOCKET|ECONNRESET)\)/);
    } finally {
      await rpc.close();
    }
  });
});
