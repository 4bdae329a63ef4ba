// The token shared by cache servers and their clients (docs/cache-server.md): read from a
// file, and the choice between a token and --insecure-no-token.
#pragma once

#include <string>

#include "warmfs/result.h"

namespace warmfs::cli {

// A whole file, or an error naming the flag (what) and the path.
Result<std::string> read_file(const std::string& path, const char* what);

// The token in path (surrounding whitespace dropped); refuses an empty or unreadable file,
// and warns when others may read it.
Result<std::string> read_token_file(const std::string& path);

// The token of token_file, or "" with --insecure-no-token (insecure); an error when both or
// neither are given, naming who needs the token ("warmfs serve", "--cache-server", ...).
Result<std::string> token_or_none(const std::string& token_file, bool insecure, const char* who);

}  // namespace warmfs::cli
