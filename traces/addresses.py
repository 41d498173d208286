"""Socket addresses as the trace records them ('ip:port', '[ipv6]:port'), in one spelling per address."""


def normalize_ip(ip: str) -> str:
    """One spelling per address: no brackets, IPv4-mapped IPv6 as plain IPv4."""
    ip = ip.strip("[]")
    if ip.lower().startswith("::ffff:") and "." in ip:
        return ip[len("::ffff:") :]
    return ip


def parse_address(address: str | None) -> tuple[str, int] | None:
    """'ip:port' or '[ipv6]:port' -> (ip, port), None when it is not one."""
    if not address or ":" not in address:
        return None
    ip, _, port = address.rpartition(":")
    try:
        return normalize_ip(ip), int(port)
    except ValueError:
        return None
