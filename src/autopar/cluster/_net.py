"""Is anything listening there? One TCP connect, bounded, before trusting Ray to find out.

Ray finds out slowly that nobody is home: ``ray.init`` on an address where
nothing listens retries its GCS connection for many minutes, and a node whose
raylet died stays "alive" in Ray's node table until the GCS health check
gives up on it (about a minute by default). A TCP connect answers at once on
a loopback or a LAN: *refused* means nothing listens on that port -- the
process is gone -- which is a fact, not a guess. A connect that is accepted,
or that times out, proves nothing (a stopped process's port still accepts),
so callers treat only a refusal as proof of absence.
"""

from __future__ import annotations

import socket

PROBE_SECONDS = 0.5  # how long one probe waits for an answer at most


def split_host_port(address: str) -> tuple[str, int | None]:
    """``(host, port)`` of ``host:port``, ``[v6]:port``, ``ray://host:port`` or a bare host (port ``None``)."""
    rest = address.split("://", 1)[-1].rstrip("/")
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else ""
    elif rest.count(":") == 1:
        host, port = rest.split(":", 1)
    else:
        host, port = rest, ""
    return host, int(port) if port.isdigit() else None


def probe(host: str, port: int, timeout: float = PROBE_SECONDS) -> tuple[bool, str] | None:
    """``None`` if something accepts a TCP connection at ``host:port`` within ``timeout`` s, else
    ``(refused, why)``: ``refused`` when the connection was refused (nothing listens there)."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return True, f"nothing listens at {host}:{port} (connection refused)"
    except TimeoutError:
        return False, f"no answer from {host}:{port} within {timeout:g} s"
    except OSError as error:
        return False, f"cannot reach {host}:{port} ({error.strerror or error})"


def refused(host: str, port: int, timeout: float = PROBE_SECONDS) -> str | None:
    """Why nothing listens at ``host:port`` if the connection is refused; ``None`` otherwise."""
    found = probe(host, port, timeout)
    return found[1] if found is not None and found[0] else None
