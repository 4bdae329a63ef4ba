#include "snapshot/branch_sweep.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "snapshot/branch_record.h"

namespace warmfs {

Result<BranchSweep> sweep_branch_orphans(ObjectStore& store, std::string_view prefix,
                                         std::string_view name, std::string_view skip_writer,
                                         const std::function<bool()>& stop) {
  auto stopped = [&] { return stop && stop(); };
  ObjectInfo record_head;
  WARMFS_ASSIGN_OR_RETURN(BranchRecord record,
                          load_branch_record(store, prefix, name, &record_head));
  std::set<std::string, std::less<>> named;
  for (const auto& [rel, e] : record.entries) {
    if (e.kind == BranchEntry::Kind::kData) named.insert(e.target);
  }
  // An object's writer is the first segment of its target ("WRITER/SEQ").
  auto writer_of = [](std::string_view target) { return target.substr(0, target.find('/')); };

  BranchSweep out;
  std::vector<std::string> orphans;
  std::map<std::string, uint64_t, std::less<>> sizes;
  uint64_t orphan_bytes = 0;
  const std::string root = branch_data_root(prefix, name);
  ListRequest req{root, "", "", 1000};
  for (;;) {
    if (stopped()) return out;
    WARMFS_ASSIGN_OR_RETURN(ListPage page, store.list(req));
    for (const ObjectInfo& o : page.objects) {
      ++out.data_objects;
      const std::string_view target = std::string_view(o.key).substr(root.size());
      const std::string_view writer = writer_of(target);
      if (named.count(target) != 0 || writer == record.writer ||
          (!skip_writer.empty() && writer == skip_writer) || o.mtime_sec >= record_head.mtime_sec) {
        continue;
      }
      orphans.push_back(o.key);
      orphan_bytes += o.size;
      sizes[o.key] = o.size;
    }
    if (!page.truncated) break;
    req.continuation_token = page.next_token;
  }
  out.orphans = orphans.size();
  if (orphans.empty() || stopped()) return out;

  // Listed after the data objects: a snapshot of the branch stores its pin before it reads the
  // record, so a snapshot that could read any of these is seen here.
  WARMFS_ASSIGN_OR_RETURN(ListPage pins,
                          store.list(ListRequest{branch_pins_root(prefix, name), "", "", 1}));
  if (!pins.objects.empty()) {
    out.pinned = true;
    return out;
  }
  WARMFS_ASSIGN_OR_RETURN(std::vector<DeleteError> refused, store.remove_many(orphans));
  out.deleted = orphans.size() - refused.size();
  out.deleted_bytes = orphan_bytes;
  for (const DeleteError& e : refused) {
    out.deleted_bytes -= sizes[e.key];
    if (out.refused.empty()) out.refused = fmt::format("{}: {} {}", e.key, e.code, e.message);
  }
  return out;
}

}  // namespace warmfs
