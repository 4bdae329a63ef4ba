#include "warmfs/result.h"

namespace warmfs {

const char* errc_name(Errc c) {
  switch (c) {
    case Errc::kOk:
      return "Ok";
    case Errc::kNotFound:
      return "NotFound";
    case Errc::kAccessDenied:
      return "AccessDenied";
    case Errc::kPreconditionFailed:
      return "PreconditionFailed";
    case Errc::kInvalidArgument:
      return "InvalidArgument";
    case Errc::kIo:
      return "IoError";
    case Errc::kTimeout:
      return "Timeout";
    case Errc::kUnavailable:
      return "Unavailable";
    case Errc::kCorrupt:
      return "Corrupt";
    case Errc::kNoSpace:
      return "NoSpace";
    case Errc::kExists:
      return "Exists";
    case Errc::kNotEmpty:
      return "NotEmpty";
    case Errc::kReadOnly:
      return "ReadOnly";
    case Errc::kNotSupported:
      return "NotSupported";
    case Errc::kRangeNotSatisfiable:
      return "RangeNotSatisfiable";
    case Errc::kCancelled:
      return "Cancelled";
    case Errc::kInternal:
      return "Internal";
    case Errc::kIsDirectory:
      return "IsDirectory";
    case Errc::kNotDirectory:
      return "NotDirectory";
    case Errc::kNotPermitted:
      return "NotPermitted";
    case Errc::kNameTooLong:
      return "NameTooLong";
  }
  return "Unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "Ok";
  return std::string(errc_name(code_)) + ": " + message_;
}

}  // namespace warmfs
