"""Numbers in words, shared by the findings and every report."""


def human_bytes(size: float | None) -> str:
    """1536 -> '1.5 KiB'; None -> 'not measured'."""
    if size is None:
        return "not measured"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_ns(nanoseconds: float | None) -> str:
    if nanoseconds is None:
        return "not measured"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if nanoseconds >= scale:
            return f"{nanoseconds / scale:.3g} {unit}"
    return f"{nanoseconds:.3g} ns"


def human_ms(seconds: float | None) -> str:
    """0.01234 -> '12.3 ms': latencies as the client saw them; None -> 'not measured'."""
    if seconds is None:
        return "not measured"
    return f"{seconds * 1000:,.1f} ms"


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
