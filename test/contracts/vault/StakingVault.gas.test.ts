import { expect } from "chai";
import { network } from "hardhat";
import { deployLending, USDC } from "../lending/lending-fixture.js";

const { ethers, networkHelpers } = await network.create();

type Sent = Promise<{ wait(): Promise<{ gasUsed: bigint } | null> }>;
const gas = async (tx: Sent) => (await (await tx).wait())!.gasUsed;

// Gas of deposit and redeem against OpenZeppelin's plain ERC4626 (`PlainERC4626`) in the same state; the target is at
// most 1.25x (1.15x before D-95 and D-96: every conversion now reads the profit lock and the impairments, and the
// interest accrued on the loans, two more storage slots, about 7,000 gas). Both vaults already hold a first depositor's USDC, as a live vault does. Printed for the docs.
describe("StakingVault gas vs PlainERC4626", () => {
  async function deploy() {
    const f = await deployLending(ethers);
    const plain = await ethers.deployContract("PlainERC4626", [await f.usdc.getAddress()]);
    for (const user of [f.alice, f.bob]) await f.usdc.connect(user).approve(await plain.getAddress(), ethers.MaxUint256);
    await f.vault.connect(f.bob).deposit(USDC(1_000), f.bob.address);
    await plain.connect(f.bob).deposit(USDC(1_000), f.bob.address);
    return { ...f, plain };
  }

  it("keeps deposit and redeem within 1.25x of the plain vault", async () => {
    const { vault, plain, alice } = await networkHelpers.loadFixture(deploy);
    const rows = new Map<string, { plain: number; staking: number; ratio: string }>();
    const put = (op: string, which: "plain" | "staking", g: bigint) => {
      const row = rows.get(op) ?? { plain: 0, staking: 0, ratio: "" };
      row[which] = Number(g);
      row.ratio = row.plain && row.staking ? (row.staking / row.plain).toFixed(3) : "";
      rows.set(op, row);
    };
    for (const [which, v] of [
      ["plain", plain],
      ["staking", vault],
    ] as const) {
      const a = alice.address;
      put("deposit (new holder)", which, await gas(v.connect(alice).deposit(USDC(100), a)));
      put("deposit (existing holder)", which, await gas(v.connect(alice).deposit(USDC(100), a)));
      put("withdraw (part)", which, await gas(v.connect(alice).withdraw(USDC(40), a, a)));
      put("redeem (part)", which, await gas(v.connect(alice).redeem((await v.balanceOf(a)) / 2n, a, a)));
      put("redeem (all)", which, await gas(v.connect(alice).redeem(await v.balanceOf(a), a, a)));
    }
    console.table(Object.fromEntries(rows));
    for (const op of ["deposit (new holder)", "deposit (existing holder)", "redeem (part)", "redeem (all)"]) {
      const row = rows.get(op)!;
      expect(row.staking / row.plain, op).to.be.at.most(1.25);
    }
  });
});
