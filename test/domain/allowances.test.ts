// Which way a wallet the user holds pays a pulling call (domain/transactions/allowances.ts,
// D-120): by the token's EIP-3009 authorization where the token takes one (USDC, the test USDC),
// else by a permit and a forwarded request; read from the token on a real embedded chain, and a
// node's failure is not taken for the token's answer.
import { expect } from "chai";
import { Contract } from "ethers";
import { createAllowances } from "../../domain/transactions/allowances.js";
import { startTestChain, type TestChain } from "../helpers/chain.js";

describe("a token's EIP-3009 authorizations (D-120)", function () {
  this.timeout(60_000);
  let chain: TestChain;
  before(async () => {
    chain = await startTestChain();
  });
  after(async () => {
    await chain?.close();
  });

  const notSent = () => {
    throw new Error("nothing is sent here");
  };
  const allowancesOf = (usdc: Contract) =>
    createAllowances({
      provider: chain.provider,
      chainId: chain.deployment.chainId,
      usdc,
      sender: { earlier: notSent, releaseKey: notSent, send: notSent },
    });

  it("the test USDC takes them", async () => {
    expect(await allowancesOf(chain.contracts.usdc).takesAuthorizations()).to.equal(true);
  });

  it("a token without them (an ERC-20 with no authorizationState) is paid by permit instead", async () => {
    // The vault's tmUSDC: an ERC-20 with a permit and no EIP-3009, asked through the USDC ABI.
    const token = new Contract(chain.contracts.vault.target as string, chain.contracts.usdc.interface, chain.provider);
    expect(await allowancesOf(token).takesAuthorizations()).to.equal(false);
  });

  it("a node that fails to answer is asked again, not taken for a token without them", async () => {
    const allowances = allowancesOf(chain.contracts.usdc);
    const send = chain.provider._send.bind(chain.provider);
    chain.provider._send = async () => {
      throw new Error("connection reset");
    };
    try {
      let failed: unknown = null;
      await allowances.takesAuthorizations().catch((error) => {
        failed = error;
      });
      expect(failed).to.be.instanceOf(Error);
    } finally {
      chain.provider._send = send;
    }
    expect(await allowances.takesAuthorizations()).to.equal(true);
  });
});
