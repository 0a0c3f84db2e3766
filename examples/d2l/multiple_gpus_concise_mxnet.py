"""d2l, "Concise Implementation for Multiple GPUs" (MXNet edition), on autopar.

The book's code with the imports changed:

    from d2l import mxnet as d2l                        ->  from autopar.d2l import mxnet as d2l
    from mxnet import autograd, gluon, init, np, npx    ->  from autopar import autograd, gluon, init, npx
                                                            import autopar as np
    from mxnet.gluon import nn                          ->  from autopar.gluon import nn

and ``train`` takes ``num_epochs`` (the book fixes it at 10) so a test can run
one short epoch. Without two GPUs, run it with the cores split into two CPU
devices: ``AUTOPAR_CPU_DEVICES=2 python examples/d2l/multiple_gpus_concise_mxnet.py``.
"""

from autopar.d2l import mxnet as d2l
from autopar import autograd, gluon, init, npx
import autopar as np
from autopar.gluon import nn
npx.set_np()


def resnet18(num_classes):
    """A slightly modified ResNet-18 model."""
    def resnet_block(num_channels, num_residuals, first_block=False):
        blk = nn.Sequential()
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.add(d2l.Residual(
                    num_channels, use_1x1conv=True, strides=2))
            else:
                blk.add(d2l.Residual(num_channels))
        return blk

    net = nn.Sequential()
    # This model uses a smaller convolution kernel, stride, and padding and
    # removes the maximum pooling layer
    net.add(nn.Conv2D(64, kernel_size=3, strides=1, padding=1),
            nn.BatchNorm(), nn.Activation('relu'))
    net.add(resnet_block(64, 2, first_block=True),
            resnet_block(128, 2),
            resnet_block(256, 2),
            resnet_block(512, 2))
    net.add(nn.GlobalAvgPool2D(), nn.Dense(num_classes))
    return net


def evaluate_accuracy_gpus(net, data_iter, split_f=d2l.split_batch):
    """Compute the accuracy for a model on a dataset using multiple GPUs."""
    # Query the list of devices
    devices = list(net.collect_params().values())[0].list_ctx()
    # No. of correct predictions, no. of predictions
    metric = d2l.Accumulator(2)
    for features, labels in data_iter:
        X_shards, y_shards = split_f(features, labels, devices)
        # Run in parallel
        pred_shards = [net(X_shard) for X_shard in X_shards]
        metric.add(sum(float(d2l.accuracy(pred_shard, y_shard)) for
                       pred_shard, y_shard in zip(
                           pred_shards, y_shards)), labels.size)
    return metric[0] / metric[1]


def train(num_gpus, batch_size, lr, num_epochs=10):
    train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)
    ctx = [d2l.try_gpu(i) for i in range(num_gpus)]
    net.initialize(init=init.Normal(sigma=0.01), ctx=ctx, force_reinit=True)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': lr})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    timer = d2l.Timer()
    animator = d2l.Animator('epoch', 'test acc', xlim=[1, num_epochs])
    for epoch in range(num_epochs):
        timer.start()
        for features, labels in train_iter:
            X_shards, y_shards = d2l.split_batch(features, labels, ctx)
            with autograd.record():
                ls = [loss(net(X_shard), y_shard) for X_shard, y_shard
                      in zip(X_shards, y_shards)]
            for l in ls:
                l.backward()
            trainer.step(batch_size)
        npx.waitall()
        timer.stop()
        animator.add(epoch + 1, (evaluate_accuracy_gpus(net, test_iter),))
    print(f'test acc: {animator.Y[0][-1]:.2f}, {timer.avg():.1f} sec/epoch '
          f'on {str(ctx)}')


net = resnet18(10)

if __name__ == "__main__":
    # Get a list of GPUs
    devices = d2l.try_all_gpus()
    # Initialize all the parameters of the network
    net.initialize(init=init.Normal(sigma=0.01), ctx=devices)
    x = np.random.uniform(size=(4, 1, 28, 28))
    x_shards = gluon.utils.split_and_load(x, devices)
    net(x_shards[0]), net(x_shards[1])
    weight = net[0].params.get('weight')
    try:
        weight.data()
    except RuntimeError:
        print('not initialized on cpu')
    weight.data(devices[0])[0], weight.data(devices[1])[0]
    train(num_gpus=1, batch_size=256, lr=0.1)
    train(num_gpus=2, batch_size=512, lr=0.2)
