#include "fuse/handover_journal.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

using namespace warmfs::handover;

TEST_CASE("a journal replays lookups, forgets, renames and handles", "[handover]") {
  std::string text;
  text += lookup_line(2, 1, "data");
  text += lookup_line(3, 2, "a b\n\xff");  // any bytes in a name
  text += lookup_line(3, 2, "a b\n\xff");
  text += lookup_line(4, 2, "gone");
  text += forget_line(4, 1);
  text += forget_line(3, 1);
  text += rename_line(2, "a b\n\xff", 1, "moved");
  text += handle_line(7, JournalHandle{3, 2, false});
  text += handle_line(8, JournalHandle{2, 0, true});
  text += release_line(8);
  const JournalState s = parse_journal(text);

  REQUIRE(s.nodes.size() == 2);
  CHECK(s.nodes.at(2).name == "data");
  CHECK(s.nodes.at(2).nlookup == 1);
  CHECK(s.nodes.at(3).parent == 1);
  CHECK(s.nodes.at(3).name == "moved");
  CHECK(s.nodes.at(3).nlookup == 1);
  CHECK(s.path_of(3) == "/moved");
  CHECK(s.path_of(99) == "node 99");
  REQUIRE(s.handles.size() == 1);
  CHECK(s.handles.at(7).nodeid == 3);
  CHECK(s.handles.at(7).flags == 2);
  CHECK_FALSE(s.handles.at(7).dir);

  SECTION("its compacted form says the same") {
    const JournalState c = parse_journal(compact_journal(s));
    CHECK(compact_journal(c) == compact_journal(s));
    CHECK(c.nodes.at(3).nlookup == 1);
  }
}

TEST_CASE("a damaged journal: torn and garbled lines are skipped, the rest counts", "[handover]") {
  std::string text = lookup_line(2, 1, "a");
  text += "L 5 1 zz\n";                        // a name that is not hex
  text += "F 2\n";                             // a field missing
  text += "Q what\n";                          // no such line
  text += "H 1 2 notanumber 0\n";              // a field that is not a number
  text += "L 99999999999999999999999 1 61\n";  // out of range
  text += lookup_line(3, 2, "b");
  text += "X";  // a torn last line
  const JournalState s = parse_journal(text);
  CHECK(s.nodes.size() == 2);
  CHECK(s.path_of(3) == "/a/b");
  CHECK(s.handles.empty());
  // A cycle of parents does not loop.
  const JournalState cycle = parse_journal(lookup_line(5, 6, "x") + lookup_line(6, 5, "y"));
  CHECK(!cycle.path_of(5).empty());
}

// Found by the restart_journal fuzz target: two counts whose sum wraps made a node with no
// lookup, which the daemon would have adopted with a count of 0.
TEST_CASE("a journal's lookup counts are held at the largest, never wrapped", "[handover]") {
  const JournalState s = parse_journal(lookup_line(2, 1, "a") + "N 2 1 61 18446744073709551615\n");
  REQUIRE(s.nodes.count(2) == 1);
  CHECK(s.nodes.at(2).nlookup == UINT64_MAX);
  CHECK(parse_journal(compact_journal(s)).nodes.at(2).nlookup == UINT64_MAX);
}

TEST_CASE("the journal file is rewritten whole and appended to", "[handover]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("warmfs-journal-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "journal").string();
  {
    JournalFile f(path);
    REQUIRE(f.rewrite(lookup_line(2, 1, "a")).is_ok());
    f.append(lookup_line(3, 2, "b"));
    CHECK(f.bytes() == read_whole_file(path).size());
  }
  CHECK(parse_journal(read_whole_file(path)).path_of(3) == "/a/b");
  {
    JournalFile f(path);
    REQUIRE(f.rewrite("").is_ok());
  }
  CHECK(read_whole_file(path).empty());
  {
    JournalFile f((dir / "missing" / "journal").string());
    CHECK_FALSE(f.rewrite("x").is_ok());
    CHECK(f.bytes() == 0);
  }
  std::filesystem::remove_all(dir);
}
