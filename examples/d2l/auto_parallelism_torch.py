"""d2l, "Automatic Parallelism" (PyTorch edition), on autopar.

The book's code with the imports changed (``import torch`` -> ``import autopar
as torch``, ``from d2l import torch as d2l`` -> ``from autopar.d2l import torch as
d2l``), inside ``chapter(size)`` so a test can run it on small matrices (the book:
4000 x 4000). Without GPUs: ``AUTOPAR_CPU_DEVICES=2 python examples/d2l/auto_parallelism_torch.py``
(the CPU devices are much slower than GPUs: expect tens of seconds at the book's size).
"""

import autopar as torch
from autopar.d2l import torch as d2l


def run(x):
    return [x.mm(x) for _ in range(50)]


def chapter(size=4000):
    devices = d2l.try_all_gpus()
    x_gpu1 = torch.rand(size=(size, size), device=devices[0])
    x_gpu2 = torch.rand(size=(size, size), device=devices[1])

    run(x_gpu1)
    run(x_gpu2)  # Warm-up all devices
    torch.cuda.synchronize(devices[0])
    torch.cuda.synchronize(devices[1])

    with d2l.Benchmark('GPU1 time'):
        run(x_gpu1)
        torch.cuda.synchronize(devices[0])

    with d2l.Benchmark('GPU2 time'):
        run(x_gpu2)
        torch.cuda.synchronize(devices[1])

    with d2l.Benchmark('GPU1 & GPU2'):
        run(x_gpu1)
        run(x_gpu2)
        torch.cuda.synchronize()

    def copy_to_cpu(x, non_blocking=False):
        return [y.to('cpu', non_blocking=non_blocking) for y in x]

    with d2l.Benchmark('Run on GPU1'):
        y = run(x_gpu1)
        torch.cuda.synchronize()

    with d2l.Benchmark('Copy to CPU'):
        y_cpu = copy_to_cpu(y)
        torch.cuda.synchronize()

    with d2l.Benchmark('Run on GPU1 and copy to CPU'):
        y = run(x_gpu1)
        y_cpu = copy_to_cpu(y, True)
        torch.cuda.synchronize()
    return y_cpu


if __name__ == "__main__":
    chapter()
