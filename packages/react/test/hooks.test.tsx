/* @jsxRuntime automatic */
// (tsx compiles this file with the root tsconfig, which names no JSX runtime: the pragma does.)

import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, fireEvent, render, renderHook, waitFor } from "@testing-library/react";
import {
  TrustMintProvider,
  useLoan,
  useLoanEligibility,
  useLoans,
  useMarkAllNotificationsRead,
  useNotificationStream,
  useNotifications,
  usePendingWithdrawals,
  useProfile,
  useRequestLoan,
  useRequestSocialVaultWithdrawal,
  useSignIn,
  useSocialVaultConfig,
  useTrustScore,
  useUnreadCount,
  useVaultDeposit,
  useVaultPosition,
  useXp,
} from "@trustmint/react";
import { ApiError, createClient, type ErrorCode, type TrustMintClient } from "@trustmint/sdk";
import { expect } from "chai";
import type { ReactNode } from "react";
import { createWalletClient, custom } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { type SignedIn, sharedService, signIn } from "../../sdk/test/support.js";

// @trustmint/react under React Testing Library (happy-dom), against the service as `npm start`
// runs it: the reads answer what the API says, a write refreshes the reads it changes, and the
// unread count follows the live notification stream.

/** A savings screen: the position, and a button that deposits 25 USDC. */
function Savings() {
  const position = useVaultPosition();
  const deposit = useVaultDeposit();
  return (
    <div>
      <p>Position: {position.data?.usdcValue ?? "…"}</p>
      <button type="button" disabled={deposit.isPending} onClick={() => deposit.mutate({ amount: 25 })}>
        Deposit 25 USDC
      </button>
      {deposit.isSuccess && <p>Deposited {deposit.data.depositAmount}</p>}
    </div>
  );
}

/** An inbox header: the live unread count, the list's length, and mark-all-read. */
function Inbox() {
  const unread = useUnreadCount();
  const list = useNotifications({ limit: 10 });
  const markAll = useMarkAllNotificationsRead();
  return (
    <div>
      <p>Unread: {unread.data ?? "…"}</p>
      <p>Listed: {list.data?.data.length ?? "…"}</p>
      <button type="button" onClick={() => markAll.mutate({})}>
        Mark all read
      </button>
    </div>
  );
}

/** A badge: the unread count (polled every 300 ms once the stream ends) and the stream's state. */
function Badge() {
  const unread = useUnreadCount({ pollMs: 300 });
  const stream = useNotificationStream();
  return (
    <p>
      Unread: {unread.data ?? "…"} ({stream.state}
      {"reason" in stream ? ` ${stream.reason}` : ""})
    </p>
  );
}

describe("@trustmint/react: hooks against npm start", function () {
  this.timeout(60_000);
  let baseUrl: string;

  before(async () => {
    baseUrl = (await sharedService()).url;
  });

  /** The app's providers around the hooks: its QueryClient, then the TrustMint client. */
  function providers(client: TrustMintClient, queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } })) {
    const wrapper = ({ children }: { children: ReactNode }) => (
      <QueryClientProvider client={queryClient}>
        <TrustMintProvider client={client}>{children}</TrustMintProvider>
      </QueryClientProvider>
    );
    return { queryClient, wrapper };
  }

  /** A signed-in user whose client records the paths it requests. */
  async function user(prefix: string, funds = 0): Promise<SignedIn & { requested: string[] }> {
    const requested: string[] = [];
    const signedIn = await signIn(baseUrl, prefix, {
      funds,
      client: {
        fetch: (request) => {
          requested.push(`${request.method} ${new URL(request.url).pathname}`);
          return fetch(request);
        },
      },
    });
    return Object.assign(signedIn, { requested });
  }

  it("reads the profile, XP, Trust Score, eligibility, loans, vault position, social vault config and pending withdrawals", async () => {
    const reader = await user("react-reader");
    const { wrapper } = providers(reader.client);
    const { result } = renderHook(
      () => ({
        profile: useProfile(),
        xp: useXp(),
        score: useTrustScore(),
        eligibility: useLoanEligibility(),
        loans: useLoans({ limit: 5 }),
        position: useVaultPosition(),
        socialVault: useSocialVaultConfig(),
        pending: usePendingWithdrawals(),
      }),
      { wrapper },
    );
    await waitFor(() => {
      const { pending: _idle, ...asked } = result.current;
      expect(
        Object.values(asked).every((query) => query.isSuccess),
        JSON.stringify(asked),
      ).to.equal(true);
    });
    const { profile, xp, score, eligibility, loans, position, socialVault, pending } = result.current;
    expect(profile.data).to.deep.equal(await reader.client.users.me());
    expect(xp.data).to.include({ userId: reader.id, level: profile.data!.level });
    expect(score.data).to.include({ userId: reader.id, score: profile.data!.trustScore });
    expect(eligibility.data).to.include({ eligible: true, tier: "New" });
    expect(loans.data).to.deep.equal({ data: [], pagination: { total: 0, limit: 5, offset: 0, hasMore: false } });
    expect(position.data).to.include({ userId: reader.id, usdcValue: "0.00" });
    expect(socialVault.data).to.include({ isConfigured: false });
    // No vault yet: the pending withdrawals are not asked for (the API would answer 404).
    expect(pending).to.include({ fetchStatus: "idle", data: undefined });
    expect(reader.requested).to.not.include("GET /v1/social-vault/withdrawals/pending");
  });

  it("a deposit from a component refreshes the position it shows", async () => {
    const saver = await user("react-saver", 100);
    const { wrapper } = providers(saver.client);
    const view = render(<Savings />, { wrapper });
    await view.findByText("Position: 0.00");
    fireEvent.click(view.getByText("Deposit 25 USDC"));
    await view.findByText("Deposited 25.00", {}, { timeout: 15_000 });
    await view.findByText("Position: 25.00", {}, { timeout: 15_000 });
    // The position was read again after the deposit, not patched by hand.
    expect(saver.requested.filter((entry) => entry === "GET /v1/vault/position")).to.have.length(2);
    view.unmount();
  });

  it("keeps the unread count live from the notification stream, and refreshes the list; marking all read clears it", async () => {
    const reader = await user("react-unread");
    const { wrapper } = providers(reader.client);
    const view = render(<Inbox />, { wrapper });
    await view.findByText("Unread: 0");
    await view.findByText("Listed: 0");
    // Notifications arrive from elsewhere (another device): the stream brings the count and a refreshed list.
    const elsewhere = createClient({
      baseUrl,
      getToken: async () => (await createClient({ baseUrl }).sandbox.token({ sub: reader.sub })).accessToken,
    });
    await elsewhere.notifications.test({ type: "in_app" });
    await view.findByText("Unread: 1", {}, { timeout: 10_000 });
    await elsewhere.notifications.test({ type: "in_app" });
    await view.findByText("Unread: 2", {}, { timeout: 10_000 });
    await view.findByText("Listed: 2", {}, { timeout: 10_000 });
    // The count came from the stream: the count endpoint was read once, at mount.
    expect(reader.requested.filter((entry) => entry === "GET /v1/notifications/unread/count")).to.have.length(1);
    expect(reader.requested.filter((entry) => entry === "GET /v1/notifications/stream")).to.have.length(1);

    fireEvent.click(view.getByText("Mark all read"));
    await view.findByText("Unread: 0", {}, { timeout: 10_000 });
    view.unmount();
  });

  it("a stream pushed out by ten newer ones says so (ended, stream_limit) and the count is polled: it does not freeze", async () => {
    const reader = await user("react-evicted");
    const { wrapper } = providers(reader.client);
    const view = render(<Badge />, { wrapper });
    await view.findByText("Unread: 0 (live)", {}, { timeout: 10_000 });
    // Ten more streams of the account (other tabs and devices): the service closes the oldest, this one.
    const token = (await createClient({ baseUrl }).sandbox.token({ sub: reader.sub })).accessToken;
    const controller = new AbortController();
    const others = Array.from({ length: 10 }, () =>
      createClient({ baseUrl, getToken: () => token }).notifications.stream({ signal: controller.signal }),
    );
    await Promise.all(others.map((other) => other.next()));
    await view.findByText("Unread: 0 (ended stream_limit)", {}, { timeout: 10_000 });
    await createClient({ baseUrl, getToken: () => token }).notifications.test({ type: "in_app" });
    await view.findByText("Unread: 1 (ended stream_limit)", {}, { timeout: 10_000 });
    controller.abort();
    view.unmount();
  });

  it("a loan request refreshes the loans and the eligibility; a withdrawal request refreshes the pending list", async () => {
    const depositor = await user("react-depositor", 300);
    await depositor.client.vault.deposit({ amount: 300 });
    const borrower = await user("react-borrower", 200);
    const guardian = await user("react-guardian");
    await borrower.client.socialVault.create({ dailyLimit: 20, timelockDuration: 3600, requiredSignatures: 1, duressPin: "2468" });
    await borrower.client.socialVault.deposit({ amount: 100 });
    await borrower.client.socialVault.addGuardian({ walletAddress: guardian.wallet });
    await borrower.client.sandbox.advanceTime({ seconds: 3_601 });

    const { wrapper } = providers(borrower.client);
    const { result } = renderHook(
      () => ({
        loans: useLoans(),
        eligibility: useLoanEligibility(),
        request: useRequestLoan(),
        pending: usePendingWithdrawals(),
        withdraw: useRequestSocialVaultWithdrawal(),
      }),
      { wrapper },
    );
    await waitFor(() =>
      expect(result.current.loans.isSuccess && result.current.eligibility.isSuccess && result.current.pending.isSuccess).to.equal(true),
    );
    expect(result.current.eligibility.data!.currentLoans).to.equal(0);
    let loanId = "";
    await act(async () => {
      loanId = (await result.current.request.mutateAsync({ amount: 15, duration: 7, purpose: "laptop repair" })).id;
    });
    await waitFor(() => expect(result.current.loans.data!.data.map((loan) => loan.id)).to.deep.equal([loanId]));
    await waitFor(() => expect(result.current.eligibility.data!.currentLoans).to.equal(1));

    let withdrawalId = "";
    await act(async () => {
      withdrawalId = (await result.current.withdraw.mutateAsync({ amount: 50, recipient: guardian.wallet })).withdrawalId;
    });
    await waitFor(() => expect(result.current.pending.data!.map((entry) => entry.withdrawalId)).to.deep.equal([withdrawalId]));
  });

  it("a hook outside the provider says what is missing", () => {
    const queryClient = new QueryClient();
    const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={queryClient}>{children}</QueryClientProvider>;
    const original = console.error;
    console.error = () => undefined; // React reports the thrown render error too
    try {
      expect(() => renderHook(() => useProfile(), { wrapper })).to.throw("TrustMintProvider");
    } finally {
      console.error = original;
    }
  });

  it("a failing read shows its ApiError at once, asked once: TanStack's retries do not stack on the SDK's", async () => {
    const reader = await user("react-missing");
    // An app's QueryClient as TanStack makes it: 3 retries by default, which the hooks leave to the SDK.
    const { wrapper } = providers(reader.client, new QueryClient());
    const missing = "00000000-0000-4000-8000-000000000000";
    const { result } = renderHook(() => useLoan(missing), { wrapper });
    await waitFor(() => expect(result.current.isError).to.equal(true), { timeout: 3_000 });
    const error = result.current.error;
    // Typed: the API's code compiles once narrowed to ApiError (before, `error` was an Error).
    const code: ErrorCode | undefined = error instanceof ApiError ? error.code : undefined;
    expect(code).to.equal("LOAN_NOT_FOUND");
    expect(reader.requested.filter((path) => path === `GET /v1/loans/${missing}`)).to.have.length(1);
  });

  it("a deposit refreshes the Trust Score and the eligibility it moves, not only the position", async () => {
    const saver = await user("react-credit", 100);
    const { wrapper } = providers(saver.client);
    const { result } = renderHook(() => ({ score: useTrustScore(), eligibility: useLoanEligibility(), deposit: useVaultDeposit() }), {
      wrapper,
    });
    await waitFor(() => expect(result.current.score.isSuccess && result.current.eligibility.isSuccess).to.equal(true));
    const count = (prefix: string) => saver.requested.filter((path) => path.startsWith(prefix)).length;
    const [scores, eligibilities] = [count("GET /v1/trust-score/"), count("GET /v1/loans/eligibility")];
    await act(async () => {
      await result.current.deposit.mutateAsync({ amount: 40 });
    });
    await waitFor(() => expect(count("GET /v1/trust-score/")).to.be.above(scores), { timeout: 15_000 });
    await waitFor(() => expect(count("GET /v1/loans/eligibility")).to.be.above(eligibilities), { timeout: 15_000 });
  });

  it("a wallet app: useSignIn with a viem wallet client (what wagmi's useWalletClient gives), then the deposit button has the wallet sign", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const typedSignatures: string[] = [];
    const walletClient = createWalletClient({ account, transport: custom({ request: async () => null }) });
    const signTypedData = walletClient.signTypedData.bind(walletClient);
    const signer = Object.assign(walletClient, {
      signTypedData: (args: Parameters<typeof signTypedData>[0]) => {
        typedSignatures.push(args.primaryType as string);
        return signTypedData(args);
      },
    });
    const anonymous = providers(createClient({ baseUrl }));
    const { result } = renderHook(() => useSignIn(), { wrapper: anonymous.wrapper });
    act(() => result.current.mutate({ signer, uri: "http://127.0.0.1:5173/" }));
    await waitFor(() => expect(result.current.isSuccess, JSON.stringify(result.current.error)).to.equal(true));
    const { accessToken, user: me } = result.current.data!;
    expect(me).to.include({ walletAddress: account.address, custody: "self" });

    const client = createClient({ baseUrl, getToken: async () => accessToken, wallet: signer });
    await client.sandbox.faucet({ amount: 30 });
    const view = render(<Savings />, { wrapper: providers(client).wrapper });
    await view.findByText("Position: 0.00");
    fireEvent.click(view.getByText("Deposit 25 USDC"));
    await view.findByText("Deposited 25.00", undefined, { timeout: 15_000 });
    expect(typedSignatures.sort()).to.deep.equal(["ForwardRequest", "Permit"]);
    view.unmount();
  });
});
