#include "common/errno_map.h"

#include <cerrno>

namespace warmfs {

int to_errno(Errc code) {
  switch (code) {
    case Errc::kOk:
      return 0;
    case Errc::kNotFound:
      return ENOENT;
    case Errc::kAccessDenied:
      return EACCES;
    case Errc::kPreconditionFailed:
      return ESTALE;
    case Errc::kInvalidArgument:
      return EINVAL;
    case Errc::kIo:
      return EIO;
    case Errc::kTimeout:
      return EIO;
    case Errc::kUnavailable:
      return EIO;
    case Errc::kCorrupt:
      return EIO;
    case Errc::kNoSpace:
      return ENOSPC;
    case Errc::kExists:
      return EEXIST;
    case Errc::kNotEmpty:
      return ENOTEMPTY;
    case Errc::kReadOnly:
      return EROFS;
    case Errc::kNotSupported:
      return ENOTSUP;
    case Errc::kRangeNotSatisfiable:
      return EINVAL;
    case Errc::kCancelled:
      return EINTR;
    case Errc::kInternal:
      return EIO;
    case Errc::kIsDirectory:
      return EISDIR;
    case Errc::kNotDirectory:
      return ENOTDIR;
    case Errc::kNotPermitted:
      return EPERM;
    case Errc::kNameTooLong:
      return ENAMETOOLONG;
  }
  return EIO;
}

}  // namespace warmfs
