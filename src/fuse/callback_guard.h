// The fence between libfuse's C callbacks and the C++ below them: no exception crosses a
// callback. guard_callback runs a callback's body; if it throws, the request is answered
// once with an errno (ENOMEM for std::bad_alloc, EIO for anything else), the exception is
// logged, and the FUSE worker thread goes back to serving. A body that throws after it has
// replied is only logged: a request is answered exactly once.
//
// Free of libfuse, so unit tests drive it with a fake reply (tests/unit/fuse).
#pragma once

#include <cerrno>
#include <exception>
#include <new>

#include "common/log.h"

namespace warmfs {

// Whether the callback running on this thread has replied; the adapter's reply helpers set it.
inline thread_local bool t_fuse_replied = false;

// body(): the callback's work, which replies (setting t_fuse_replied). reply_error(int errno):
// answers the request with an error, or, for a request that takes no reply (forget), does
// nothing. Neither the guard nor reply_error throws.
template <typename Body, typename ReplyError>
void guard_callback(const char* op, Body&& body, ReplyError&& reply_error) noexcept {
  t_fuse_replied = false;
  int err = EIO;
  // Logging may itself fail (it allocates): it is attempted, never allowed to throw out.
  try {
    body();
    return;
  } catch (const std::bad_alloc&) {
    err = ENOMEM;
    try {
      log::error("FUSE {}: out of memory; answered ENOMEM", op);
    } catch (...) {
    }
  } catch (const std::exception& e) {
    try {
      log::error("FUSE {}: unexpected exception ({}); answered EIO", op, e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      log::error("FUSE {}: unexpected exception; answered EIO", op);
    } catch (...) {
    }
  }
  if (!t_fuse_replied) {
    t_fuse_replied = true;
    reply_error(err);
  }
}

}  // namespace warmfs
