#include "common/listen_address.h"

#include <arpa/inet.h>

#include <charconv>

namespace warmfs {
namespace {

bool is_ipv4(const std::string& s) {
  in_addr a{};
  return ::inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool is_ipv6(const std::string& s) {
  in6_addr a{};
  return ::inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

}  // namespace

std::string ListenAddress::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text, const ListenRules& rules) {
  const std::string quoted = std::string(rules.flag) + " '" + std::string(text) + "'";
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return Status(Errc::kInvalidArgument, quoted + " is not HOST:PORT");
  std::string host(text.substr(0, colon));
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  if (host.empty() && !bracketed) host = "0.0.0.0";
  if (host == "localhost") host = "127.0.0.1";
  const bool ok_host = bracketed ? is_ipv6(host) : (is_ipv4(host) || is_ipv6(host));
  if (!ok_host) {
    return Status(Errc::kInvalidArgument,
                  quoted + ": the host must be an IPv4 or [IPv6] address or localhost");
  }
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return Status(Errc::kInvalidArgument, quoted + ": the port must be a number up to 65535");
  }
  if (port == 0 && !rules.port_zero_ok) {
    return Status(Errc::kInvalidArgument, quoted + ": the port must be between 1 and 65535");
  }
  return ListenAddress{host, static_cast<uint16_t>(port)};
}

}  // namespace warmfs
