// The ioctl channel of the order file, MOUNT/.warmfs/order (docs/loaders.md).
//
// A mount the kernel holds read-only (warmfs mount --read-only, a read-only bind mount such as
// a Kubernetes readOnly volume) refuses to open the order file for writing (EROFS), but not
// an ioctl on a descriptor opened read-only. An order then goes in pieces: each
// WARMFS_IOC_ORDER_APPEND adds `length` bytes of the order's text (the same text as written to
// the file, "warmfs-order 1" first) to the descriptor's buffer, and WARMFS_IOC_ORDER_PUBLISH
// parses and publishes it (EINVAL: malformed, with the reason in the mount's log; the order
// before stays). Other files answer ENOTTY. Plain C, so that loaders in any language can copy
// the numbers: APPEND is _IOW('W', 1, 16,380 bytes) = 0x7ffc5701, PUBLISH is _IO('W', 2) =
// 0x5702.
#pragma once

#include <linux/ioctl.h>
#include <stdint.h>

#define WARMFS_ORDER_CHUNK_BYTES 16376

struct warmfs_order_chunk {
  uint32_t length;  // bytes of `bytes` that count, at most WARMFS_ORDER_CHUNK_BYTES
  uint8_t bytes[WARMFS_ORDER_CHUNK_BYTES];
};

#define WARMFS_IOC_ORDER_APPEND _IOW('W', 1, struct warmfs_order_chunk)
#define WARMFS_IOC_ORDER_PUBLISH _IO('W', 2)
