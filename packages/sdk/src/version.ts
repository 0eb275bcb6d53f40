/** This package's version (package.json's; a test keeps them equal), sent with every request. */
export const SDK_VERSION = "0.1.0";

/** Who is calling, sent as `X-TrustMint-Client` (browsers too: they keep User-Agent their own). */
export const CLIENT_HEADER = `sdk-js/${SDK_VERSION}`;
