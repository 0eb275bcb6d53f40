import { pathToFileURL } from "node:url";
import { act, screen, waitFor } from "@testing-library/react";
import { expect } from "chai";
import type { Root } from "react-dom/client";
import { readmeExamples, writeExample } from "../../sdk/test/readme.js";
import { sharedService } from "../../sdk/test/support.js";

// The React README's quick start, as written: the module renders into the page's #root (happy-dom
// here, a browser in an app) against the service as `npm start` runs it; the test clicks what a
// user clicks and reads what the page shows.

describe("@trustmint/react: the README's quick start", function () {
  this.timeout(90_000);
  let root: Root | undefined;

  after(async () => {
    await act(async () => root?.unmount());
    document.body.innerHTML = "";
  });

  it("renders the profile, the score, the live unread count and the position; a deposit refreshes the position", async () => {
    const [example] = readmeExamples("react");
    process.env.TRUSTMINT_URL = (await sharedService()).url;
    document.body.innerHTML = '<div id="root"></div>';
    // tsx compiles with the root tsconfig, which names no JSX runtime: the pragma does (an app's tsconfig has jsx).
    const file = writeExample(example!, "/* @jsxRuntime automatic */\n");
    await act(async () => {
      ({ root } = await import(pathToFileURL(file).href));
    });

    await waitFor(() => expect(screen.getByText(/^Position:/).textContent).to.equal("Position: 0.00 USDC"), { timeout: 20_000 });
    expect(screen.getByText(/^Wallet:/).textContent).to.match(/^Wallet: 0x[0-9a-fA-F]{40}$/);
    await waitFor(() => expect(screen.getByText(/^Trust Score:/).textContent).to.match(/^Trust Score: \d+$/), { timeout: 10_000 });
    await waitFor(() => expect(screen.getByText(/^Unread:/).textContent).to.equal("Unread: 0"), { timeout: 10_000 });

    const deposit = screen.getByRole("button", { name: "Deposit 25 USDC" }) as HTMLButtonElement;
    expect(deposit.disabled).to.equal(true);
    await act(async () => screen.getByRole("button", { name: "Get 100 test USDC" }).click());
    await waitFor(() => expect(deposit.disabled).to.equal(false), { timeout: 20_000 });
    await act(async () => deposit.click());
    await waitFor(() => expect(screen.getByText(/^Position:/).textContent).to.equal("Position: 25.00 USDC"), { timeout: 30_000 });
    expect(screen.queryByRole("alert")).to.equal(null);
  });
});
