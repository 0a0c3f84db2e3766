"""``autopar cluster start | stop | list``: a local multi-node Ray cluster that outlives the command.

Ray's own CLI cannot start a second node on 127.0.0.1, and ``ray start``
has no token unless told; this starts :class:`autopar.cluster.LocalCluster`
persistently instead (every node on 127.0.0.1, token authentication on) and
prints its address. ``autopar.cluster.connect(ADDRESS)``, or ``--cluster
ADDRESS``, joins it with its token (``cluster/_started.py``).
"""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "cluster",
        help="start, stop or list local multi-node Ray clusters on 127.0.0.1",
        description="A local Ray cluster of several nodes, every one bound to 127.0.0.1 with token "
        "authentication, that keeps running after this command: join it with "
        "autopar.cluster.connect(ADDRESS) or --cluster ADDRESS (autopar finds its token). Needs autopar[cluster].",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = actions.add_parser("start", help="start a cluster and print its address",
                               description="Start a local cluster on 127.0.0.1 and print its address.")
    start.add_argument("--nodes", type=int, default=2, metavar="N", help="nodes (default 2)")
    start.add_argument("--cpus", type=int, metavar="N", help="CPUs per node (default: the cores shared out)")
    start.add_argument("--object-store-mb", type=int, metavar="MB",
                       help="object store per node (default: 30%% of the available memory, shared out)")
    start.add_argument("--node-timeout", type=float, metavar="S",
                       help="seconds before a node that stops answering is declared lost (default: Ray's, about 60)")
    start.set_defaults(run=_start)
    stop = actions.add_parser("stop", help="stop a cluster started here",
                              description="Stop a cluster that autopar cluster start started (the only one, "
                              "or the one at ADDRESS, or --all).")
    stop.add_argument("address", nargs="?", metavar="ADDRESS", help="the cluster's address (host:port)")
    stop.add_argument("--all", action="store_true", help="stop every cluster started here")
    stop.set_defaults(run=_stop)
    listing = actions.add_parser("list", help="list the clusters started here",
                                 description="List the clusters autopar cluster start started, running or not.")
    listing.set_defaults(run=_list)


def _start(args: argparse.Namespace) -> int:
    from autopar.cluster import LocalCluster, _started
    from autopar.cluster._local import MIN_STORE

    least = MIN_STORE // 2**20
    if args.object_store_mb is not None and args.object_store_mb < least:
        raise ValueError(f"--object-store-mb {args.object_store_mb}: an object store needs at least {least} MB "
                         f"(Ray refuses ordinary arrays in a smaller one); leave it out for 30% of the available "
                         f"memory, shared out")  # fmt: skip
    store = None if args.object_store_mb is None else args.object_store_mb * 2**20
    cluster = LocalCluster(args.nodes, args.cpus, store, node_timeout=args.node_timeout, persistent=True)
    try:
        record = _started.save(cluster)
    except BaseException:
        cluster.stop()
        raise
    timeout = "Ray's default (about 60 s)" if args.node_timeout is None else f"{args.node_timeout:g} s"
    print(f"started a {record['nodes']}-node Ray cluster on 127.0.0.1, token authentication on: "
          f"{record['cpus']} CPU(s) and a {record['object_store_memory'] / 2**30:.2f} GiB object store per node, "
          f"a silent node is lost after {timeout}")
    print(f"  address: {record['address']}")
    print(f"  files:   {record['tmpdir']} (Ray's logs and the token, readable by you only)")
    print(f"join it:   autopar.cluster.connect({record['address']!r})   or   autopar demo --cluster {record['address']}")
    print(f"stop it:   autopar cluster stop {record['address']}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from autopar.cluster import _started

    records = _started.records()
    if args.all:
        chosen = records
    elif args.address is not None:
        chosen = [r for r in records if r["address"] == args.address]
        if not chosen:
            raise ValueError(f"no cluster started by autopar cluster start at {args.address}; "
                             f"started: {', '.join(r['address'] for r in records) or 'none'}")  # fmt: skip
    elif len(records) == 1:
        chosen = records
    elif not records:
        print("no cluster started by autopar cluster start to stop")
        return 0
    else:
        raise ValueError(f"{len(records)} clusters were started here ({', '.join(r['address'] for r in records)}); "
                         f"name one (autopar cluster stop ADDRESS) or pass --all")  # fmt: skip
    if not chosen:
        print("no cluster started by autopar cluster start to stop")
    for record in chosen:
        ended = _started.stop(record)
        print(f"stopped the cluster at {record['address']} ({ended} process(es)), removed {record['tmpdir']}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from autopar.cluster import _started

    records = _started.records()
    if not records:
        print("no cluster started by autopar cluster start")
    for record in records:
        state = "running" if _started.running(record) else "not running (autopar cluster stop cleans it up)"
        print(f"{record['address']}  {record['nodes']} node(s)  {state}")
    return 0
