import { expect } from "chai";
import { openFailureReason } from "../../core/db.js";

describe("why a database did not open", () => {
  it("names PGlite's file system errors, which carry an errno and no message", () => {
    // What PGlite threw when DATA_DIR's disk was full (seen on a 30 MB tmpfs): Emscripten's ErrnoError.
    expect(openFailureReason({ name: "ErrnoError", errno: 51 })).to.equal("no space left on the device");
    expect(openFailureReason({ name: "ErrnoError", errno: 44 })).to.equal("file system error 44");
  });

  it("keeps the driver's own words when it has them", () => {
    expect(openFailureReason(new Error("password authentication failed"))).to.equal("password authentication failed");
    expect(openFailureReason(Object.assign(new Error("connect failed"), { cause: new Error("ECONNREFUSED 127.0.0.1:5") }))).to.equal(
      "ECONNREFUSED 127.0.0.1:5",
    );
    expect(openFailureReason({ code: "ENOTFOUND" })).to.equal("ENOTFOUND");
  });
});
