"""Numbers in words, and the conversions between units, shared by the analyses, the findings and
every report."""

KIB = 1024
MIB = 1024 * KIB
NS_PER_S = 1e9
NS_PER_MS = 1e6
MS_PER_S = 1000


def ns_to_s(nanoseconds: float) -> float:
    return nanoseconds / NS_PER_S


def ns_to_ms(nanoseconds: float) -> float:
    return nanoseconds / NS_PER_MS


def s_to_ns(seconds: float) -> float:
    return seconds * NS_PER_S


def s_to_ms(seconds: float) -> float:
    return seconds * MS_PER_S


def bytes_to_kib(size: float) -> float:
    return size / KIB


def bytes_to_mib(size: float) -> float:
    return size / MIB


def human_bytes(size: float | None) -> str:
    """1536 -> '1.5 KiB'; None -> 'not measured'."""
    if size is None:
        return "not measured"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < KIB or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= KIB
    raise AssertionError("unreachable")


def human_ns(nanoseconds: float | None) -> str:
    if nanoseconds is None:
        return "not measured"
    for unit, scale in (("s", NS_PER_S), ("ms", NS_PER_MS), ("µs", 1e3)):
        if nanoseconds >= scale:
            return f"{nanoseconds / scale:.3g} {unit}"
    return f"{nanoseconds:.3g} ns"


def human_ms(seconds: float | None) -> str:
    """0.01234 -> '12.3 ms': latencies as the client saw them; None -> 'not measured'."""
    if seconds is None:
        return "not measured"
    return f"{s_to_ms(seconds):,.1f} ms"


def ratio(value: float | None, unmeasured: str = "not measured") -> str:
    """3129.36 -> '3,129x'; 1.6 -> '1.6x'."""
    if value is None:
        return unmeasured
    return f"{value:,.0f}x" if value >= 100 else f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def human_measure(value: float | None, unit: str) -> str:
    """A per-window measure's value in words, by its unit ('ns' | 'bytes' | 'count')."""
    if value is None:
        return "not measured"
    if unit == "ns":
        return human_ns(value)
    if unit == "bytes":
        return human_bytes(value)
    return f"{value:,.0f}"
