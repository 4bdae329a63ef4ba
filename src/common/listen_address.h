// Listen addresses given on the command line (`warmfs serve --listen`, `--metrics-listen`).
//
// A pure parser: "HOST:PORT", "[IPV6]:PORT" or ":PORT" (all IPv4 addresses). HOST is an IPv4
// or IPv6 literal, or "localhost" (taken as 127.0.0.1, so a listener never depends on how
// the resolver orders localhost's addresses); other names are refused, since a server binds
// an address, not a name. It does not bind or resolve anything.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "warmfs/result.h"

namespace warmfs {

struct ListenAddress {
  std::string host;  // an IP literal, without brackets
  uint16_t port = 0;
  // "host:port", with brackets around an IPv6 host.
  std::string to_string() const;
};

struct ListenRules {
  std::string_view flag = "--listen";  // names the option in messages
  bool port_zero_ok = true;            // 0: any free port (fine for a server that reports its port)
};

// --metrics-listen: Prometheus must be told the port, so "any free port" is no use.
inline constexpr ListenRules kMetricsListenRules{"--metrics-listen", false};

// kInvalidArgument with a one-line message naming rules.flag when text is not an address.
Result<ListenAddress> parse_listen_address(std::string_view text, const ListenRules& rules = {});

}  // namespace warmfs
