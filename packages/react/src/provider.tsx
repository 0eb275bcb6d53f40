"use client";

// The provider holds the API client (and the live notification feed the hooks share); it sits
// inside the app's own QueryClientProvider, whose cache the hooks use.

import { useQueryClient } from "@tanstack/react-query";
import type { TrustMintClient } from "@trustmint/sdk";
import { createContext, type ReactNode, useContext, useEffect, useMemo } from "react";
import { createLiveFeed, type LiveFeed } from "./live.js";

interface TrustMint {
  client: TrustMintClient;
  live: LiveFeed;
}

const TrustMintContext = createContext<TrustMint | null>(null);

export function TrustMintProvider({ client, children }: { client: TrustMintClient; children: ReactNode }) {
  const queryClient = useQueryClient();
  const live = useMemo(() => createLiveFeed(client, queryClient), [client, queryClient]);
  useEffect(() => () => live.stop(), [live]);
  const value = useMemo(() => ({ client, live }), [client, live]);
  return <TrustMintContext.Provider value={value}>{children}</TrustMintContext.Provider>;
}

function useTrustMintContext(): TrustMint {
  const context = useContext(TrustMintContext);
  if (!context) throw new Error("TrustMint hooks need a <TrustMintProvider client={...}> above them");
  return context;
}

/** The client the provider holds, for calls no hook covers. */
export const useTrustMint = (): TrustMintClient => useTrustMintContext().client;
export const useLiveFeed = (): LiveFeed => useTrustMintContext().live;
