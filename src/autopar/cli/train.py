"""``autopar train``: d2l's multi-device training experiment, on 1 and then all devices."""

from __future__ import annotations

import argparse
from typing import Any

from autopar.cli._cluster import HELP, joined


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "train",
        help="train LeNet (or ResNet-18) on 1 and then all devices; time per epoch, samples/s, accuracy",
        description="d2l's multi-device training experiment: LeNet-5 (or --model resnet, d2l's ResNet-18) on "
        "Fashion-MNIST-shaped data, first on one device, then data-parallel on all of them (two GPUs, else the "
        "CPU split into two devices), with each bucket of gradients summed across devices as soon as it is "
        "ready everywhere (while backward still runs, where the model's gradients fill several buckets: on CPU "
        "devices of one process LeNet's fill one, summed by one operation that reads both devices' memory). "
        "With --cluster, the devices are one CPU device on each of two nodes of a Ray cluster. "
        "Without --data the data is synthetic (nothing is downloaded), and the output says so.",
        epilog="The performance figures (2 devices against 1, sums against no sums, against PyTorch DDP run "
        "alongside) are measured by: python bench/training.py",
    )
    p.add_argument("--model", choices=["lenet", "resnet", "resnet18"], default="lenet", help="default: lenet")
    p.add_argument("--data", metavar="PATH", help="the real MNIST or Fashion-MNIST: a folder with the four IDX files "
                   "(also torchvision's MNIST/raw or FashionMNIST/raw under it), or a Keras-style .npz")
    p.add_argument("--epochs", type=int, help="epochs per run (default: 2 for LeNet, 1 for ResNet)")
    p.add_argument("--steps", type=int, help="steps per epoch (default: the whole training set for LeNet, 20 for ResNet)")
    p.add_argument("--batch-size", type=int, help="batch per device (default: 128 for LeNet, 32 for ResNet)")
    p.add_argument("--lr", type=float, default=0.1, help="SGD learning rate (default: 0.1)")
    p.add_argument("--test-samples", type=int, help="test images to classify (default: all 10,000; 1,000 for ResNet)")
    p.add_argument("--quick", action="store_true", help="a short look: LeNet 1 epoch of 30 steps and 1,000 test "
                   "images; ResNet-18 4 steps of 16 images per device and 128 test images (each about 10 s on a "
                   "2-core machine)")
    p.add_argument("--seed", type=int, default=0, help="data and initialisation seed (default: 0)")
    p.add_argument("--plot", metavar="FILE", help="PNG: the timeline of a few data-parallel steps, gradient sums "
                   "beside backward; the learning curves go to FILE with '-curves' before the suffix (needs matplotlib)")
    p.add_argument("--trace", metavar="FILE", help="Chrome-trace / Perfetto JSON of the same few steps")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--cluster", metavar="ADDRESS", help=HELP + "; the data-parallel run has one replica per node")
    p.set_defaults(run=run)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    model = "resnet18" if args.model in ("resnet", "resnet18") else "lenet"
    lenet = model == "lenet"
    epochs = args.epochs if args.epochs is not None else (1 if args.quick or not lenet else 2)
    quick_steps, quick_tests = (30, 1000) if lenet else (4, 128)
    steps = args.steps if args.steps is not None else (quick_steps if args.quick else None if lenet else 20)
    tests = args.test_samples if args.test_samples is not None else (quick_tests if args.quick else
                                                                     None if lenet else 1000)  # fmt: skip
    batch = args.batch_size if args.batch_size is not None else (16 if args.quick and not lenet else None)
    for name, value in (("--epochs", epochs), ("--steps", steps), ("--batch-size", args.batch_size),
                        ("--test-samples", tests)):  # fmt: skip
        if value is not None and value < 1:
            raise ValueError(f"{name} must be a whole number >= 1")
    if not args.lr > 0:
        raise ValueError("--lr must be > 0")
    return {"model": model, "epochs": epochs, "steps": steps, "tests": tests, "batch": batch,
            "warm_up": 1 if args.quick else 3}  # fmt: skip


def _curves_path(path: str) -> str:
    stem, dot, suffix = path.rpartition(".")
    return f"{stem}-curves.{suffix}" if dot else f"{path}-curves"


def run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.cluster is not None:
        with joined(args.cluster) as devices:
            return _train(args, settings, devices, "one device on each of two cluster nodes")
    from autopar.benchmarks import training

    devices, why = training.training_devices()
    return _train(args, settings, devices, why)


def _train(args: argparse.Namespace, settings: dict[str, Any], devices: list[Any], why: str) -> int:
    from autopar.benchmarks import training
    from autopar.datasets import check_image_shape, fashion_mnist
    from autopar.nn import models

    data = fashion_mnist(args.data, seed=args.seed)
    name = settings["model"]
    check_image_shape(data, (1, 28, 28), "LeNet" if name == "lenet" else "this ResNet-18")
    batch = settings["batch"] or training.BATCH_PER_DEVICE[name]
    count = models.build(name, args.seed).parameter_count
    print(f"autopar train: {name} ({count:,} parameters), SGD lr {args.lr:g}, batch {batch} per device")
    if data.synthetic:
        print(f"data: {data.name} -- synthetic, NOT the real Fashion-MNIST (pass --data PATH for it)")
    else:
        print(f"data: {data.name}")
    print(f"devices: {', '.join(map(str, devices))} ({why})")
    training.warm_up(name, devices, settings["warm_up"], batch)
    import gc

    gc.freeze()  # torch's ~300,000 objects out of Python's full collections (a ~0.2 s pause each, measured)
    results = []
    for run_devices in ([devices[0]], devices):
        label = f"{len(run_devices)} device{'s' if len(run_devices) > 1 else ''} ({', '.join(map(str, run_devices))})"
        print(f"\n{label}, global batch {batch * len(run_devices)}")

        def report(e: training.EpochStats) -> None:
            print(f"  epoch {e.epoch}: loss {e.train_loss:.3f}, train acc {e.train_acc:.3f}, test acc {e.test_acc:.3f}, "
                  f"{e.seconds:.1f} sec, {e.samples_per_s:,.0f} samples/s", flush=True)  # fmt: skip

        profile = 3 if len(run_devices) > 1 and (args.plot or args.trace) else 0
        results.append(training.train(name, run_devices, data, epochs=settings["epochs"], steps=settings["steps"],
                                      lr=args.lr, batch_per_device=batch, test_samples=settings["tests"],
                                      seed=args.seed, progress=False if args.quiet else None, profile_steps=profile,
                                      report=report))  # fmt: skip
    one, many = results
    ratio = many.samples_per_s / one.samples_per_s
    target = "" if args.cluster else f"; target >= 1.7x: {'met' if ratio >= 1.7 else 'NOT met'} in this run"
    print(f"\n{len(devices)} devices / 1 device: {ratio:.2f}x samples/s "
          f"({many.samples_per_s:,.0f} vs {one.samples_per_s:,.0f}; same batch per device{target})")
    print(f"the step with gradient sums against the step without, and against PyTorch DDP run alongside: "
          f"python bench/training.py --model {name} (or autopar bench, LeNet)")
    if many.profile is not None:
        summary = many.profile.summary()
        print(f"traffic between devices over 3 profiled steps (batch copies, gradient sums): "
              f"{summary.traffic_s * 1e3:.1f} ms, {summary.traffic_hidden_share:.0%} of it while a compute lane was busy")
        if args.trace:
            many.profile.export_chrome_trace(args.trace)
            print(f"trace written to {args.trace} (open it in https://ui.perfetto.dev)")
        if args.plot:
            many.profile.plot(args.plot, title=f"{name}: 3 data-parallel steps on {', '.join(map(str, devices))}")
            training.plot_curves(results, _curves_path(args.plot))
            print(f"timeline written to {args.plot}, learning curves to {_curves_path(args.plot)}")
    return 0
