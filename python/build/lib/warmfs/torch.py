"""A PyTorch Sampler that publishes each epoch's order to a warmfs mount (docs/loaders.md)."""

from __future__ import annotations

import os
from typing import Callable, Iterator, Optional, Union

from torch.utils.data import Sampler

from . import Entry, find_mount, publish_order

__all__ = ["OrderedSampler"]


class OrderedSampler(Sampler):
    """Wraps a sampler (RandomSampler, DistributedSampler, a BatchSampler, ...): each time an
    epoch starts (iter()), it draws the whole epoch's indices from the wrapped sampler,
    publishes them to the mount mapped by entry_of (index -> path, or (path, offset, length)),
    then yields them unchanged. The DataLoader calls iter() in the main process, once per
    epoch, so the order is published once, before the workers ask for the first sample.

    A failure to publish (a mount that is read-only, say) is raised unless strict=False, in
    which case it is reported once through on_error and the epoch goes on unannounced."""

    def __init__(self, sampler, entry_of: Callable[[int], Entry],
                 mount: Union[str, os.PathLike], strict: bool = True,
                 on_error: Optional[Callable[[Exception], None]] = None):
        self.sampler = sampler
        self.entry_of = entry_of
        self.mount = find_mount(mount)
        self.strict = strict
        self.on_error = on_error
        self.published = 0  # epochs published

    def __len__(self) -> int:
        return len(self.sampler)

    def set_epoch(self, epoch: int) -> None:
        """Passed on to the wrapped sampler (DistributedSampler's reshuffle per epoch)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator:
        items = list(iter(self.sampler))
        flat = []
        for item in items:  # a BatchSampler yields lists of indices
            flat.extend(item if isinstance(item, (list, tuple)) else [item])
        try:
            publish_order(self.mount, (self.entry_of(int(i)) for i in flat))
            self.published += 1
        except OSError as e:
            if self.strict:
                raise
            if self.on_error is not None:
                self.on_error(e)
        return iter(items)
