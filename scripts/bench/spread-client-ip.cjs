// autocannon setupRequest (run in its worker thread, so a file, not a closure): each request
// comes from another client IP (X-Forwarded-For from loopback is trusted), so the anonymous
// per-IP rate limit measures serving, not 429s.
let n = 0;
module.exports = (request) => {
  n += 1;
  return { ...request, headers: { ...request.headers, "x-forwarded-for": `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` } };
};
