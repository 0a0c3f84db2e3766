"""Clusters started by ``autopar cluster start``: found again by address, stopped by ``autopar cluster stop``.

Ray's own CLI cannot start a second node on 127.0.0.1 (it either refuses or
moves the node to the machine's network address), and a plain ``ray start``
has no token unless told. ``autopar cluster start`` starts a persistent
:class:`~autopar.cluster.LocalCluster` instead -- every node on 127.0.0.1,
token authentication on -- whose processes outlive the command. Its private
directory (``autopar-ray-*`` in the temporary directory, readable by this
user only) holds Ray's files, the token and :data:`RECORD`: the address and
the token's path. ``connect(address)`` looks the address up here and
authenticates with that token; ``connect("auto")`` finds the cluster when it
is the only one running. Stopping kills every process of the cluster
(``_local.processes``), then removes the directory.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import stat
import tempfile
from typing import Any

from autopar.cluster._local import kill, processes

RECORD = "cluster.json"


def save(cluster: Any) -> dict[str, Any]:
    """Write the record of a persistent ``LocalCluster`` into its directory; return it."""
    record = {"address": cluster.address, "tmpdir": cluster.tmpdir, "token_path": cluster.token_path,
              "nodes": 1 + len(cluster.worker_nodes), "cpus": cluster.cpus,
              "object_store_memory": cluster.object_store_memory, "node_timeout": cluster.node_timeout}  # fmt: skip
    path = os.path.join(cluster.tmpdir, RECORD)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
        json.dump(record, fh)
    return record


def records() -> list[dict[str, Any]]:
    """Every started cluster's record of this user, oldest first (running or not: see :func:`running`)."""
    found = []
    bases = {tempfile.gettempdir(), "/tmp"}
    for base in sorted(bases):
        for directory in glob.glob(os.path.join(base, "autopar-ray-*")):
            path = os.path.join(directory, RECORD)
            try:
                info = os.stat(directory)
                if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077 or not os.path.isfile(path):
                    continue  # not ours alone: never trusted
                with open(path) as fh:
                    record = json.load(fh)
                found.append((os.stat(path).st_mtime, record))
            except (OSError, ValueError):
                continue
    return [record for _, record in sorted(found, key=lambda pair: pair[0])]


def find(address: str) -> dict[str, Any] | None:
    """The record of the started cluster at ``address`` (``host:port``), if any."""
    for record in records():
        if record.get("address") == address:
            return record
    return None


def running(record: dict[str, Any]) -> bool:
    return bool(processes(record["tmpdir"]))


def stop(record: dict[str, Any]) -> int:
    """Stop the started cluster of ``record`` at once (SIGKILL: nothing of it is kept), remove its directory;
    how many processes it had."""
    procs = processes(record["tmpdir"])
    kill(procs)
    shutil.rmtree(record["tmpdir"], ignore_errors=True)
    return len(procs)
