// `invmw collect`: receives the samplers' live UDP streams (INVMW_SAMPLER_STREAM) and writes
// per-node logs, a merged log and a summary with loss rates and confidence intervals.
//
// Ranks inside a network namespace (e.g. an emulated platform made with `ip netns`) see only
// that namespace's loopback: run the collector inside the same namespace
// (`ip netns exec NAME invmw collect ...`), or give it an address both can reach.
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>

#include "cli/args.h"
#include "cli/verb.h"
#include "common/config.h"
#include "sampler/collector.h"

namespace invmw::sampler {
namespace {

std::atomic<bool> g_stop{false};
void OnStopSignal(int) {
  g_stop = true;
}

int Collect(int argc, char** argv) {
  std::string listen = "127.0.0.1:47800", out, duration;
  bool quiet = false;
  cli::Args args(
      "invmw collect [options] --out DIR",
      "Receives the live sample streams of running jobs (INVMW_SAMPLER_STREAM=host:port) "
      "until --duration has passed or it is interrupted, then writes node-<host>.log per "
      "node, merged.log (all nodes on one time axis), summary.json, and prints per-node "
      "loss rates and 95% confidence intervals of the metric rates.");
  args.Option("--listen", "ADDR:PORT", &listen,
              "address to bind (default 127.0.0.1:47800, loopback only; port 0 picks a free one)")
      .Option("--out", "DIR", &out, "directory for the logs (created)")
      .Option("--duration", "SECONDS", &duration, "stop after this long (default: until Ctrl-C)")
      .Flag("--quiet", &quiet, "no live summary line")
      .Epilog(
          "Ranks inside a network namespace see only that namespace's loopback: run the collector "
          "there too (ip netns exec NAME invmw collect ...).\n"
          "Malformed, truncated and foreign datagrams are counted and ignored; so are the\n"
          "datagrams of streams beyond the stream limit (docs/sampler.md, collector limits).");
  bool done = false;
  if (int rc = args.Parse(argc, argv, &done); rc || done) return rc;
  if (out.empty()) return cli::Fail("collect: --out DIR is required");
  double seconds = 0;
  if (!duration.empty() && (!config::ParseDuration(duration, &seconds) || seconds <= 0))
    return cli::Fail("collect: --duration " + duration +
                     ": expected a positive duration (e.g. 10, 2.5s)");
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size())
    return cli::Fail("collect: --listen " + listen + ": expected ADDR:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (int port; !config::ParsePort(listen.substr(colon + 1), &port))
    return cli::Fail("collect: --listen " + listen + ": the port must be a number 0..65535");
  // The directory is made before listening: data received must not be lost at the end.
  {
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec || access(out.c_str(), W_OK) != 0)
      return cli::Fail("collect: cannot write --out " + out + ": " +
                       (ec ? ec.message() : std::string(std::strerror(errno))));
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_PASSIVE;
  if (int rc = getaddrinfo(host.empty() ? "127.0.0.1" : host.c_str(), listen.c_str() + colon + 1,
                           &hints, &res))
    return cli::Fail("collect: --listen " + listen + ": " + gai_strerror(rc));
  const int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    freeaddrinfo(res);
    return cli::Fail("collect: cannot bind " + listen + ": " + std::strerror(errno));
  }
  freeaddrinfo(res);
  int rcvbuf = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
  char addr[INET6_ADDRSTRLEN] = "?", port[16] = "?";
  getnameinfo(reinterpret_cast<sockaddr*>(&bound), blen, addr, sizeof addr, port, sizeof port,
              NI_NUMERICHOST | NI_NUMERICSERV);
  std::fprintf(stderr, "invmw collect: listening on %s:%s\n", addr, port);
  std::fflush(stderr);

  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const bool live = !quiet && isatty(STDERR_FILENO);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto next_line = start + std::chrono::seconds(1);
  Collector c;
  unsigned char buf[2048];  // larger than any valid datagram, so oversized ones are seen whole
  while (!g_stop) {
    const auto now = Clock::now();
    if (seconds > 0 && now - start >= std::chrono::duration<double>(seconds)) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      for (int i = 0; i < 1024; ++i) {
        const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) break;
        c.Feed(buf, size_t(n));
      }
    }
    if (live && Clock::now() >= next_line) {
      std::fprintf(stderr, "\r%s   ", c.LiveLine().c_str());
      std::fflush(stderr);
      next_line += std::chrono::seconds(1);
    }
  }
  close(fd);
  if (live) std::fprintf(stderr, "\n");
  std::string err;
  try {
    const CollectorReport r = c.Analyze();
    if (!Collector::WriteLogs(out, r, &err)) return cli::Fail("collect: " + err);
    std::fputs(Collector::RenderSummary(r).c_str(), stdout);
  } catch (const std::exception& e) {
    return cli::Fail(std::string("collect: cannot write the logs: ") + e.what());
  }
  std::printf("logs written to %s\n", out.c_str());
  return 0;
}

}  // namespace
}  // namespace invmw::sampler

INVMW_VERB("collect", "receive live sample streams, merge nodes, report loss and rates",
           invmw::sampler::Collect);
