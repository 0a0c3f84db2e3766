"""Reaching an existing cluster: bounded, authenticated where autopar can, and loud where it cannot.

What ``connect(address)`` does around ``ray.init`` for a cluster it did not
start itself:

- **Where.** ``"auto"`` is Ray's rule (``RAY_ADDRESS``, or the cluster last
  started on this machine by ``ray start``), else the one cluster that
  ``autopar cluster start`` is running (``_started``) -- never whatever
  Ray's process scan happens to find (:func:`resolve`).
- **Is anyone there.** Ray retries an address where nothing listens for many
  minutes (822 s measured). One TCP connect first (``_net.probe``, bounded by
  ``timeout``): a refusal or silence fails at once, naming what was tried.
  Then ``ray.init`` runs with Ray's GCS connection settings scaled to
  ``timeout`` (:func:`bound_ray_init`), so a port that answers but is no
  Ray cluster also fails in about ``timeout`` seconds.
- **Token.** A cluster started by ``autopar cluster start`` is joined with
  its own token. After joining, a driver that is not using token
  authentication means the cluster does not require it (one that did would
  have refused the driver): :class:`InsecureClusterWarning` says so, and how
  to start a secure one. Through Ray Client (``ray://``) this cannot be told.
- **Dashboard.** ``dashboard=True`` needs Ray's dashboard packages
  (``ray[default]``): checked before anything starts (:func:`check_dashboard`).
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from typing import Any

from autopar.cluster import _net, _started
from autopar.cluster._local import use_token
from autopar.cluster._ray import EnvPatch
from autopar.cluster._records import is_loopback, split_host
from autopar.errors import ClusterError

SECURE_HINT = ("start it with token authentication: `RAY_AUTH_MODE=token ray start --head ...` with the same "
               "token on every node and driver (Ray's token-auth guide), or `autopar cluster start` for a local one")


class ClusterWarning(UserWarning):
    """Something about the cluster joined that its user should know (``connect`` goes on)."""


class InsecureClusterWarning(ClusterWarning):
    """The cluster joined does not require Ray's token authentication: others who reach it can run code on it."""


def resolve(ray: Any, address: str) -> str:
    """The address ``connect(address)`` will reach (``"auto"`` resolved); ClusterError if none is found.

    ``"auto"``: ``RAY_ADDRESS``, else the cluster ``ray start`` last recorded
    on this machine (Ray's own rule), else the one cluster ``autopar cluster
    start`` runs. Not Ray's last resort -- any GCS process found running on
    the machine, whoever started it -- which would join a cluster nobody named.
    """
    if address != "auto":
        return address
    found = os.environ.get("RAY_ADDRESS") or None
    if found in (None, "auto"):
        try:
            found = ray._private.services.find_bootstrap_address(None)
        except Exception:  # noqa: BLE001 - no record, or a Ray that keeps none
            found = None
    if found not in (None, "auto", "local"):
        return str(found)
    started = [r for r in _started.records() if _started.running(r)]
    if len(started) == 1:
        return str(started[0]["address"])
    listed = f" ({', '.join(r['address'] for r in started)})" if started else ""
    raise ClusterError(
        f"connect('auto'): no running Ray cluster found -- RAY_ADDRESS is not set, Ray has no cluster recorded "
        f"on this machine (ray start records one), and autopar cluster start runs {len(started)}{listed}; pass "
        f"the address ('host:port'), or call connect() for a local cluster"
    )


def check_reachable(asked: str, address: str, timeout: float) -> None:
    """Fail at once, saying what was tried, when nothing answers at ``address``'s port."""
    host, port = _net.split_host_port(address)
    if port is None:
        return  # no port to probe: Ray's default applies, and its bounded join says the rest
    found = _net.probe(host, port, min(timeout, 10.0))
    if found is not None:
        via = f" (found for {asked!r})" if asked != address else ""
        raise ClusterError(
            f"connect({asked!r}): {found[1]}{via}, so no Ray cluster can be joined there; check the address "
            f"(a cluster's head prints it: ray start --head, autopar cluster start) and that the head is running"
        )


def bound_ray_init(env: EnvPatch, timeout: float) -> None:
    """Scale Ray's GCS connection settings so that ``ray.init`` gives up after about ``timeout`` s.

    Ray's defaults (a 5 s connect, 30 s to answer, 20 tries) add up to many
    minutes against a port that accepts connections but is no Ray cluster.
    Read by this process when the config is reloaded (``_local.reload_ray_config``).
    """
    # One try (the probe said someone listens): a connect, a subscription, a first request, a 1 s pause.
    env.set("RAY_gcs_rpc_server_connect_timeout_s", str(max(1, round(timeout / 5))))
    env.set("RAY_py_gcs_connect_timeout_s", str(max(1, math.floor((timeout - 1) / 2))))
    env.set("RAY_gcs_server_port_wait_time_s", "1")


TOKEN_HINT = ("give this process the cluster's token: RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=FILE (or "
              "RAY_AUTH_TOKEN=TOKEN), as on its nodes; a cluster of autopar cluster start is joined with its own "
              "token by the user who started it")


def refused_token(error: BaseException) -> bool:
    """Whether ``ray.init`` failed because the cluster refused this driver's token, or its lack of one.

    Ray raises a bare ``ConnectionError`` ("Failed to connect to Ray
    cluster"); the reason is in its causes: an ``AuthenticationError``
    ("InvalidAuthToken"), within about a second.
    """
    seen: BaseException | None = error
    for _ in range(8):  # causes chain a few levels deep; never loop on a cycle
        if seen is None:
            return False
        text = f"{type(seen).__name__}: {seen}"
        if "AuthenticationError" in text or "InvalidAuthToken" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def token_state() -> str:
    """What token this process offers, in words (for the message of a refused one)."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        return "it has none: RAY_AUTH_MODE is not 'token'"
    return "its token is not the cluster's"


def authenticate(env: EnvPatch, address: str) -> bool:
    """Use the token of the cluster ``autopar cluster start`` runs at ``address``; True if it is one."""
    record = _started.find(address)
    if record is None or not record.get("token_path"):
        return False
    use_token(env, record["token_path"])
    return True


def warn_without_token(ray: Any, asked: str) -> None:
    """Warn (:class:`InsecureClusterWarning`) if the cluster just joined accepts drivers without a token."""
    if asked.startswith("ray://"):
        return
    try:
        raylet = sys.modules["ray._raylet"]
        token_mode = raylet.get_authentication_mode() == raylet.AuthenticationMode.TOKEN
    except Exception:  # noqa: BLE001 - a Ray without token authentication at all
        token_mode = False
    if not token_mode:
        warnings.warn(
            f"connect({asked!r}): the cluster does not use token authentication, so any user or process that "
            f"reaches its ports can run code on its nodes and read its data; {SECURE_HINT}",
            InsecureClusterWarning, stacklevel=3,
        )


def check_dashboard(ray: Any) -> None:
    """ClusterError naming the package to install when Ray's dashboard cannot start here."""
    missing = ray._private.utils.get_dashboard_dependency_error()
    if missing is not None:
        raise ClusterError(
            f"connect(dashboard=True): Ray's dashboard needs packages this Ray was installed without ({missing}); "
            f'install them with: pip install "ray[default]" -- or connect without dashboard=True'
        )


# -- what Ray reports ----------------------------------------------------------------------------


def reported_address(ray: Any) -> str | None:
    """The GCS address Ray reports for this connection (None through Ray Client)."""
    try:
        return str(ray.get_runtime_context().gcs_address)
    except Exception:  # noqa: BLE001 - Ray Client has no GCS address to show
        return None


def reported_addresses(ray: Any) -> dict[str, str]:
    """Every address Ray reports for this connection: ``{what: address}``."""
    out: dict[str, str] = {}
    gcs = reported_address(ray)
    if gcs:
        out["the GCS"] = gcs
    try:
        out["the driver's node"] = str(ray.util.get_node_ip_address())
    except Exception:  # noqa: BLE001 - Ray Client: the driver is not on a node
        pass
    for info in ray.nodes():
        if info.get("Alive"):
            where = f"{info['NodeManagerAddress']}:{info.get('NodeManagerPort', '')}".rstrip(":")
            out[f"node {info['NodeID'][:12]}"] = where
    return out


def check_loopback(target: str | None, reported: dict[str, str]) -> None:
    """Raise ClusterError when a loopback ``target`` led to an address off the loopback."""
    if target is None or not is_loopback(target):
        return
    outside = {what: addr for what, addr in reported.items() if not is_loopback(split_host(addr))}
    if outside:
        listed = "; ".join(f"{what} at {addr}" for what, addr in outside.items())
        raise ClusterError(
            f"connect: asked for a cluster on the loopback ({target}), but Ray reports {listed}, outside "
            f"127.0.0.0/8; autopar does not leave the loopback on its own. Connect to the cluster's network "
            f"address explicitly if you mean to"
        )
