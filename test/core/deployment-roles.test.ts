// Issue #43 item 2 (D-100): the deployment gives the service's online key (the deployer) only the
// operational roles, and every admin role to a timelock whose proposer is the admin key. The review
// moved the pool's idle USDC to the online key in two calls (grant itself the vault's LENDER_ROLE,
// then lend); on this deployment both calls revert.
import { expect } from "chai";
import { Contract, Wallet } from "ethers";
import { connectRpc, type EmbeddedChain, startEmbeddedChain } from "../../core/chain.js";
import { ConfigError } from "../../core/config.js";
import { type Deployment, ensureDeployment, loadArtifact } from "../../core/deployments.js";
import { DEPLOYER_KEY, usdc } from "../helpers/chain.js";

const ADMIN_KEY = "0x59c6995e998f97a5a0044966f0945389dc9c86dae88c7a8412f4603b6b78690d"; // Hardhat account #1
const DAY = 24 * 3600;

/** The message a call was refused with. */
const reason = (call: Promise<unknown>) =>
  call.then(
    () => "not refused",
    (error: Error) => error.message,
  );

describe("deployment roles: the online key operates, the timelock administers", function () {
  this.timeout(120_000);
  let embedded: EmbeddedChain;
  let provider: Awaited<ReturnType<typeof connectRpc>>["provider"];
  let deployment: Deployment;
  let online: Wallet;
  let admin: Wallet;
  const contract = (key: string, file: string, name: string, runner: Wallet | typeof provider = provider) =>
    new Contract(deployment.contracts[key]!.address, loadArtifact(file, name).abi as never, runner);

  before(async () => {
    embedded = await startEmbeddedChain("127.0.0.1", 0);
    ({ provider } = await connectRpc(embedded.rpcUrl));
    online = new Wallet(DEPLOYER_KEY, provider);
    admin = new Wallet(ADMIN_KEY, provider);
    await (await online.sendTransaction({ to: admin.address, value: 10n ** 18n })).wait();
    deployment = await ensureDeployment({
      provider,
      deployerPrivateKey: DEPLOYER_KEY,
      fresh: true,
      admin: admin.address,
      timelockDelaySeconds: 3 * DAY,
    });
  });

  after(async () => {
    provider.destroy();
    await embedded.close();
  });

  const administered = () => [
    contract("interestRateModel", "vault/InterestRateModel.sol", "InterestRateModel"),
    contract("stakingVault", "vault/StakingVault.sol", "StakingVault"),
    contract("loanBook", "lending/LoanBook.sol", "LoanBook"),
    contract("paymentRouter", "payments/PaymentRouter.sol", "PaymentRouter"),
  ];

  it("hands every admin role to the timelock, whose proposer and executor is the admin key", async () => {
    const timelock = contract("timelock", "governance/PlatformTimelock.sol", "PlatformTimelock");
    const timelockAddress = deployment.contracts.timelock!.address;
    for (const each of administered()) {
      const role = await each.getFunction("DEFAULT_ADMIN_ROLE")();
      expect(await each.getFunction("hasRole")(role, timelockAddress)).to.equal(true);
      expect(await each.getFunction("hasRole")(role, online.address)).to.equal(false);
      expect(await each.getFunction("hasRole")(role, admin.address)).to.equal(false);
    }
    expect(await timelock.getFunction("getMinDelay")()).to.equal(BigInt(3 * DAY));
    for (const role of ["PROPOSER_ROLE", "EXECUTOR_ROLE", "CANCELLER_ROLE"]) {
      const id = await timelock.getFunction(role)();
      expect(await timelock.getFunction("hasRole")(id, admin.address), role).to.equal(true);
      expect(await timelock.getFunction("hasRole")(id, online.address), role).to.equal(false);
    }
  });

  it("leaves the online key its operational roles and nothing that moves the pool's idle USDC", async () => {
    const vault = contract("stakingVault", "vault/StakingVault.sol", "StakingVault", online);
    const book = contract("loanBook", "lending/LoanBook.sol", "LoanBook", online);
    const router = contract("paymentRouter", "payments/PaymentRouter.sol", "PaymentRouter", online);
    const has = (c: Contract, role: string) =>
      c
        .getFunction(role)()
        .then((id) => c.getFunction("hasRole")(id, online.address));
    expect([await has(vault, "YIELD_ROLE"), await has(vault, "PAUSER_ROLE"), await has(book, "OPERATOR_ROLE")]).to.deep.equal([
      true,
      true,
      true,
    ]);
    expect(await has(router, "OPERATOR_ROLE")).to.equal(true);
    expect(await has(vault, "LENDER_ROLE")).to.equal(false);
    expect(await has(book, "REFUNDER_ROLE")).to.equal(false);

    // The review's two calls.
    const lender = await vault.getFunction("LENDER_ROLE")();
    expect(await reason(vault.getFunction("grantRole").staticCall(lender, online.address))).to.match(/AccessControlUnauthorizedAccount/);
    const due = (await provider.getBlock("latest"))!.timestamp + 30 * DAY;
    expect(await reason(vault.getFunction("lend").staticCall(1n, online.address, usdc(1), 0n, 0n, due, 0n))).to.match(
      /AccessControlUnauthorizedAccount/,
    );
    expect(await reason(vault.getFunction("releaseReserveSurplus").staticCall(online.address, 1n))).to.match(
      /AccessControlUnauthorizedAccount/,
    );
    expect(await reason(router.getFunction("setFee").staticCall(1_000n, online.address))).to.match(/AccessControlUnauthorizedAccount/);
  });

  it("applies an admin change only through the timelock, after its delay", async () => {
    const timelock = contract("timelock", "governance/PlatformTimelock.sol", "PlatformTimelock", admin);
    const router = contract("paymentRouter", "payments/PaymentRouter.sol", "PaymentRouter");
    const newTreasury = Wallet.createRandom().address;
    const data = router.interface.encodeFunctionData("setFee", [150n, newTreasury]);
    const zero = `0x${"0".repeat(64)}`;
    await (await timelock.getFunction("schedule")(router.target, 0n, data, zero, zero, BigInt(3 * DAY))).wait();
    expect(await reason(timelock.getFunction("execute").staticCall(router.target, 0n, data, zero, zero))).to.match(
      /TimelockUnexpectedOperationState/,
    );
    await provider.send("evm_increaseTime", [3 * DAY]);
    await (await timelock.getFunction("execute")(router.target, 0n, data, zero, zero)).wait();
    expect(await router.getFunction("treasury")()).to.equal(newTreasury);
    expect(await router.getFunction("feeBps")()).to.equal(150n);
  });

  it("refuses to deploy without an admin address where one is required (production)", async () => {
    const error = await ensureDeployment({ provider, deployerPrivateKey: DEPLOYER_KEY, fresh: true, requireAdmin: true }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).to.be.instanceOf(ConfigError);
    expect((error as Error).message).to.match(/ADMIN_ADDRESS/);
  });
});
