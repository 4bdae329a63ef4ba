// The one place where warmfs error codes become errno values for the kernel.
#pragma once

#include "warmfs/result.h"

namespace warmfs {

// Returns a positive errno for a failed status, 0 for ok.
int to_errno(Errc code);
inline int to_errno(const Status& s) { return to_errno(s.code()); }

}  // namespace warmfs
