// What the read and write halves of the XML code share (xml.cc, xml_write.cc): loading an
// answer with pugixml and checking its root, the one-line "malformed ... XML" status, and
// folding a value onto one line for messages. Private to objstore.
#pragma once

#include <pugixml.hpp>
#include <string>
#include <string_view>

#include "warmfs/result.h"

namespace warmfs::s3::xml_detail {

// kCorrupt: "malformed WHAT XML: DETAIL".
Status corrupt(std::string_view what, std::string_view detail);

// Parses body into doc and returns its root element, which must be <root_a> (or <root_b> when
// given). Text made only of whitespace is kept when it is an element's only content, so a key
// of spaces from a server that does not URL-encode stays itself. kCorrupt for an empty or
// malformed body or another root.
Result<pugi::xml_node> load(pugi::xml_document& doc, std::string_view body, std::string_view what,
                            std::string_view root_a, std::string_view root_b = {});

// Newlines and tabs as spaces, for values quoted in a one-line message.
std::string one_line(std::string_view s);

}  // namespace warmfs::s3::xml_detail
