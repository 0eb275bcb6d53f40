// The hosted checkout's script (served from /checkout/assets: the page's Content-Security-Policy
// allows no other). It signs the payer in (the sandbox's form takes a /dev/token; a browser wallet
// signs in with Ethereum), then posts the chosen method to POST /checkout/{paymentId}/pay (a
// wallet's payment signed by it: prepared, signed, sent) and sends the payer on to the merchant.

(() => {
  const main = document.querySelector("main.checkout");
  if (!main?.dataset.paymentId) return;
  const paymentId = main.dataset.paymentId;
  const message = document.getElementById("message");
  const storageKey = `trustmint-checkout-token:${paymentId}`;
  // Back from the identity provider: the access token in the fragment, kept for this tab, then gone from the address bar.
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  if (fragment.get("access_token")) {
    sessionStorage.setItem(storageKey, fragment.get("access_token"));
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  let token = sessionStorage.getItem(storageKey);

  const say = (text, isError) => {
    message.textContent = text;
    message.setAttribute("role", isError ? "alert" : "status");
    message.classList.toggle("error", Boolean(isError));
  };

  const methods = () => Array.from(document.querySelectorAll("button.method"));
  const signedIn = (who) => {
    for (const id of ["sandbox-signin", "provider-signin", "wallet-signin"]) {
      const element = document.getElementById(id);
      if (element) element.hidden = true;
    }
    // What asked the payer to sign in says nothing more once they have.
    for (const hint of document.querySelectorAll(".terms-hint")) hint.hidden = true;
    const title = document.getElementById("signin-title");
    if (title) title.textContent = title.dataset.signedIn;
    const shown = document.getElementById("signed-in");
    if (shown) {
      shown.hidden = false;
      document.getElementById("who").textContent = who;
    }
    for (const button of methods()) button.disabled = button.dataset.unavailable === "true";
    void showTerms();
  };

  const reasons = JSON.parse(message.dataset.reasons || "{}");
  // Amounts in cents that add up to what they split (every part but the last rounded down to the cent).
  const inCents = (amounts) => {
    const micro = amounts.map((amount) => Math.round(amount * 1e6));
    const shown = micro.slice(0, -1).map((part) => Math.floor(part / 1e4) * 1e4);
    const total = micro.reduce((sum, part) => sum + part, 0);
    shown.push(total - shown.reduce((sum, part) => sum + part, 0));
    return shown.map((part) => (part / 1e6).toFixed(part % 1e4 === 0 ? 2 : 6));
  };

  // The signed-in payer's own terms of credit and installments (their Trust Score tier decides).
  const showTerms = async () => {
    const response = await fetch(`/checkout/${encodeURIComponent(paymentId)}/terms`, {
      headers: { authorization: `Bearer ${token}` },
    }).catch(() => null);
    const answer = response ? await response.json().catch(() => null) : null;
    if (!answer?.success) return;
    for (const [method, terms] of Object.entries(answer.data)) {
      const element = document.querySelector(`[data-terms="${method}"]`);
      const button = document.querySelector(`button[data-method="${method}"]`);
      if (!element || !button || method === "direct") continue;
      if (!terms.eligible) {
        element.textContent = message.dataset.notForYou.replace("{reason}", reasons[terms.reason] || reasons.other);
        button.disabled = true;
        button.dataset.unavailable = "true";
      } else if (method === "credit") {
        element.textContent = message.dataset.yourTerms
          .replace("{insurance}", (terms.insuranceFee ?? 0).toFixed(2))
          .replace("{interest}", terms.interest.toFixed(2))
          .replace("{total}", terms.totalRepayment.toFixed(2))
          .replace("{due}", terms.dueDate.slice(0, 10));
      } else if (method === "split") {
        // The payer's own schedule: within their tier's longest term, it may be shorter than the plan shown above.
        const shown = inCents(terms.installments.map((part) => part.totalRepayment));
        const list = terms.installments.map((part, i) => `${shown[i]} USDC ${part.dueDate.slice(0, 10)}`);
        element.textContent = message.dataset.yourInstallments.replace("{list}", list.join(", "));
      }
    }
  };

  const form = document.getElementById("sandbox-signin");
  if (form) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const account = String(new FormData(form).get("account") || "").trim();
      if (!account) return;
      const response = await fetch("/dev/token", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ sub: `checkout|${account}`, name: account }),
      });
      const answer = await response.json().catch(() => null);
      if (!response.ok || !answer?.success) {
        say(answer?.error?.message || `HTTP ${response.status}`, true);
        return;
      }
      token = answer.data.accessToken;
      sessionStorage.setItem(storageKey, token);
      sessionStorage.setItem(`${storageKey}:who`, account);
      signedIn(account);
    });
  }
  if (token) signedIn(sessionStorage.getItem(`${storageKey}:who`) || "");

  const post = (path, body, headers) =>
    fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    }).then(
      async (response) => ({ response, answer: await response.json().catch(() => null) }),
      () => ({ response: null, answer: null }),
    );
  const failure = (answer, response) => new Error(answer?.error?.message || (response ? `HTTP ${response.status}` : "No answer"));

  // The payer's browser wallet: the first that announces itself (EIP-6963), else window.ethereum.
  const walletButton = document.getElementById("wallet-signin");
  let wallet = null;
  let account = sessionStorage.getItem(`${storageKey}:wallet`);
  const offer = (provider) => {
    if (wallet || !provider || typeof provider.request !== "function") return;
    wallet = provider;
    if (walletButton && !token) walletButton.hidden = false;
  };
  window.addEventListener("eip6963:announceProvider", (event) => offer(event.detail?.provider));
  window.dispatchEvent(new Event("eip6963:requestProvider"));
  offer(window.ethereum);
  const hexOf = (text) => `0x${Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
  const shortAddress = (address) => `${address.slice(0, 6)}…${address.slice(-4)}`;

  // Sign-In with Ethereum: the service writes the message, the wallet signs it once.
  if (walletButton) {
    walletButton.addEventListener("click", async () => {
      try {
        say(message.dataset.walletSigning, false);
        const [address] = await wallet.request({ method: "eth_requestAccounts" });
        const uri = window.location.href.split("#")[0];
        const nonce = await post("/v1/auth/siwe/nonce", { address, domain: window.location.host, uri });
        if (!nonce.answer?.success) throw failure(nonce.answer, nonce.response);
        const text = nonce.answer.data.message;
        const signature = await wallet.request({ method: "personal_sign", params: [hexOf(text), address] });
        const verified = await post("/v1/auth/siwe/verify", { message: text, signature });
        if (!verified.answer?.success) throw failure(verified.answer, verified.response);
        token = verified.answer.data.accessToken;
        account = address;
        sessionStorage.setItem(storageKey, token);
        sessionStorage.setItem(`${storageKey}:who`, shortAddress(address));
        sessionStorage.setItem(`${storageKey}:wallet`, address);
        say("", false);
        signedIn(shortAddress(address));
      } catch (error) {
        say(error?.message || String(error), true);
      }
    });
  }

  /**
   * Pays with `method`; a payer whose wallet is their own (403 SIGNATURE_REQUIRED) has it sign:
   * the payment prepared, its typed data signed (USDC's authorization of exactly the amount, one
   * signature: D-120; a permit too, were one asked for), and sent again under the same Idempotency-Key.
   */
  const pay = async (method, key) => {
    const path = `/checkout/${encodeURIComponent(paymentId)}/pay`;
    const headers = { authorization: `Bearer ${token}`, "idempotency-key": key };
    const first = await post(path, { method }, headers);
    if (first.answer?.error?.code !== "SIGNATURE_REQUIRED" || !wallet || !account) return first;
    const prepared = await post(`${path}/prepare`, { method }, { authorization: `Bearer ${token}` });
    if (!prepared.answer?.success) return prepared;
    say(message.dataset.walletSigning, false);
    const sign = (typed) => wallet.request({ method: "eth_signTypedData_v4", params: [account, JSON.stringify(typed)] });
    const signatures = { "wallet-signature": await sign(prepared.answer.data.request) };
    if (prepared.answer.data.permit) signatures["wallet-permit-signature"] = await sign(prepared.answer.data.permit);
    say(message.dataset.paying, false);
    return post(path, { method }, { ...headers, ...signatures });
  };

  // One Idempotency-Key per method chosen: a second click (or a retry after a lost answer) is the same attempt.
  const keys = new Map();
  for (const button of methods()) {
    button.addEventListener("click", async () => {
      if (!token) {
        say(message.dataset.signIn, true);
        return;
      }
      const method = button.dataset.method;
      if (!keys.has(method)) keys.set(method, crypto.randomUUID());
      for (const other of methods()) other.disabled = true;
      say(message.dataset.paying, false);
      const { response, answer } = await pay(method, keys.get(method)).catch((error) => ({
        response: null,
        answer: { error: { message: error?.message || String(error) } },
      }));
      if (answer?.success) {
        say(message.dataset.paid, false);
        main.dataset.status = "success";
        if (answer.data.redirectUrl) window.location.assign(answer.data.redirectUrl);
        return;
      }
      say(answer?.error?.message || "The payment could not be made; try again.", true);
      if (response && response.status === 401) {
        token = null;
        sessionStorage.removeItem(storageKey);
      }
      for (const other of methods()) other.disabled = other.dataset.unavailable === "true" || !token;
    });
  }
})();
