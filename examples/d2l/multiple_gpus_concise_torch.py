"""d2l, "Concise Implementation for Multiple GPUs" (PyTorch edition), on autopar.

The book's code with the imports changed:

    from d2l import torch as d2l   ->  from autopar.d2l import torch as d2l
    import torch                   ->  import autopar as torch
    from torch import nn           ->  from autopar import nn

and ``train`` takes ``num_epochs`` (the book fixes it at 10) so a test can run
one short epoch. Without two GPUs, run it with the cores split into two CPU
devices: ``AUTOPAR_CPU_DEVICES=2 python examples/d2l/multiple_gpus_concise_torch.py``.
The data is the real Fashion-MNIST (downloaded on first use, or found in
``$AUTOPAR_DATA`` or d2l's ``../data``).
"""

from autopar.d2l import torch as d2l
import autopar as torch
from autopar import nn


def resnet18(num_classes, in_channels=1):
    """A slightly modified ResNet-18 model."""
    def resnet_block(in_channels, out_channels, num_residuals,
                     first_block=False):
        blk = []
        for i in range(num_residuals):
            if i == 0 and not first_block:
                blk.append(d2l.Residual(in_channels, out_channels,
                                        use_1x1conv=True, strides=2))
            else:
                blk.append(d2l.Residual(out_channels, out_channels))
        return nn.Sequential(*blk)

    # This model uses a smaller convolution kernel, stride, and padding and
    # removes the maximum pooling layer
    net = nn.Sequential(
        nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU())
    net.add_module("resnet_block1", resnet_block(64, 64, 2, first_block=True))
    net.add_module("resnet_block2", resnet_block(64, 128, 2))
    net.add_module("resnet_block3", resnet_block(128, 256, 2))
    net.add_module("resnet_block4", resnet_block(256, 512, 2))
    net.add_module("global_avg_pool", nn.AdaptiveAvgPool2d((1,1)))
    net.add_module("fc", nn.Sequential(nn.Flatten(),
                                       nn.Linear(512, num_classes)))
    return net


def train(net, num_gpus, batch_size, lr, num_epochs=10):
    train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size)
    devices = [d2l.try_gpu(i) for i in range(num_gpus)]
    def init_weights(m):
        if type(m) in [nn.Linear, nn.Conv2d]:
            nn.init.normal_(m.weight, std=0.01)
    net.apply(init_weights)
    # Set the model on multiple GPUs
    net = nn.DataParallel(net, device_ids=devices)
    trainer = torch.optim.SGD(net.parameters(), lr)
    loss = nn.CrossEntropyLoss()
    timer = d2l.Timer()
    animator = d2l.Animator('epoch', 'test acc', xlim=[1, num_epochs])
    for epoch in range(num_epochs):
        net.train()
        timer.start()
        for X, y in train_iter:
            trainer.zero_grad()
            X, y = X.to(devices[0]), y.to(devices[0])
            l = loss(net(X), y)
            l.backward()
            trainer.step()
        timer.stop()
        animator.add(epoch + 1, (d2l.evaluate_accuracy_gpu(net, test_iter),))
    print(f'test acc: {animator.Y[0][-1]:.2f}, {timer.avg():.1f} sec/epoch '
          f'on {str(devices)}')


if __name__ == "__main__":
    net = resnet18(10)
    # Get a list of GPUs
    devices = d2l.try_all_gpus()
    train(net, num_gpus=1, batch_size=256, lr=0.1)
    train(net, num_gpus=2, batch_size=512, lr=0.2)
