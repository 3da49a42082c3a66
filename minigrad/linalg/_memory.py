"""How much memory this process may still take, so that a large factorisation is refused up
front with a MemoryError naming the size, rather than failing deep inside LAPACK (a
segfault under an address-space limit) or being killed by the system."""

from __future__ import annotations

import resource
import time


def _meminfo_available() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_left() -> float | None:
    """RLIMIT_AS (ulimit -v) less this process's virtual size: what malloc may still map."""
    try:
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[0])
        return float(limit - pages * resource.getpagesize())
    except (OSError, ValueError, IndexError):
        return None


def _cgroup_left() -> float | None:
    """A container's memory limit (cgroup v2) less its use."""
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current") as f:
            return float(int(limit) - int(f.read()))
    except (OSError, ValueError):
        return None


def available() -> float | None:
    """Bytes this process may still allocate (the tightest of the system's available
    memory, the address-space limit and the container's limit), or None if unknown."""
    known = [x for x in (_meminfo_available(), _address_space_left(), _cgroup_left())
             if x is not None]
    return max(0.0, min(known)) if known else None


# The last reading: (when, what was left, the function that read it). Reading costs ~30 us
# (four /proc and /sys files), 9% of one 60x40 SVD in a loop; a need under an eighth of
# what was left within the last second is taken as fitting without another reading (the
# process would have to take the other seven eighths meanwhile). Keyed on the function, so
# that a replaced ``available`` (tests) is always asked.
_last: tuple[float, float, object] = (-1.0, 0.0, None)


def _left(need: float) -> float | None:
    global _last
    t, left, fn = _last
    now = time.monotonic()
    if fn is available and now - t < 1.0 and need * 8 <= left:
        return left
    left2 = available()
    if left2 is not None:
        _last = (now, left2, available)
    return left2


def fits(need: float) -> bool:
    """Whether need bytes fit in what is available (True when that is unknown)."""
    left = _left(need)
    return left is None or need <= left


def require(need: float, what: str, *args: object) -> None:
    """Raise MemoryError, naming what (``what % args``: formatted only then, as a dtype's
    name costs microseconds) and the sizes, if need bytes are not available."""
    left = _left(need)
    if left is not None and need > left:
        raise MemoryError(f"{what % args} needs about {_size(need)} of working memory, and "
                          f"only {_size(left)} is available")


def _size(n: float) -> str:
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"
