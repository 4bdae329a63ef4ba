// What a restarted daemon reads back from the state directory of a restartable mount: the
// journal an earlier daemon wrote (parse_journal, fuse/handover_journal.h), which a crash may
// have torn and which is, to the daemon reading it, outside input. Any bytes must parse
// without a crash or a hang into nodes that each hold a lookup, whose paths end (a cycle of
// parents included), and whose compacted journal says the same when parsed again.
#include "fuse/handover_journal.h"
#include "fuzz_util.h"

using namespace warmfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const handover::JournalState s = handover::parse_journal(fuzz::as_view(data, size));
  for (const auto& [node, j] : s.nodes) {
    FUZZ_CHECK(j.nlookup > 0);
    FUZZ_CHECK(!s.path_of(node).empty());
  }
  const std::string compact = handover::compact_journal(s);
  const handover::JournalState again = handover::parse_journal(compact);
  FUZZ_CHECK(again.nodes.size() == s.nodes.size());
  FUZZ_CHECK(again.handles.size() == s.handles.size());
  FUZZ_CHECK(handover::compact_journal(again) == compact);
  return 0;
}
