"""d2l, "Automatic Parallelism" (MXNet edition), on autopar.

The book's code with the imports changed (``from mxnet import np, npx`` ->
``import autopar as np; from autopar import npx``, ``from d2l import mxnet as
d2l`` -> ``from autopar.d2l import mxnet as d2l``), inside ``chapter(size)`` so a
test can run it on small matrices (the book: 4000 x 4000). Without GPUs:
``AUTOPAR_CPU_DEVICES=2 python examples/d2l/auto_parallelism_mxnet.py``.
"""

from autopar.d2l import mxnet as d2l
import autopar as np
from autopar import npx
npx.set_np()


def run(x):
    return [x.dot(x) for _ in range(50)]


def chapter(size=4000):
    devices = d2l.try_all_gpus()
    x_gpu1 = np.random.uniform(size=(size, size), ctx=devices[0])
    x_gpu2 = np.random.uniform(size=(size, size), ctx=devices[1])

    run(x_gpu1)  # Warm-up both devices
    run(x_gpu2)
    npx.waitall()

    with d2l.Benchmark('GPU1 time'):
        run(x_gpu1)
        npx.waitall()

    with d2l.Benchmark('GPU2 time'):
        run(x_gpu2)
        npx.waitall()

    with d2l.Benchmark('GPU1 & GPU2'):
        run(x_gpu1)
        run(x_gpu2)
        npx.waitall()

    def copy_to_cpu(x):
        return [y.copyto(npx.cpu()) for y in x]

    with d2l.Benchmark('Run on GPU1'):
        y = run(x_gpu1)
        npx.waitall()

    with d2l.Benchmark('Copy to CPU'):
        y_cpu = copy_to_cpu(y)
        npx.waitall()

    with d2l.Benchmark('Run on GPU1 and copy to CPU'):
        y = run(x_gpu1)
        y_cpu = copy_to_cpu(y)
        npx.waitall()
    return y_cpu


if __name__ == "__main__":
    chapter()
