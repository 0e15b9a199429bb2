#!/usr/bin/env python3
"""pytorch_cnn.py: the chapter 1 model's training step in PyTorch, for `make bench`.

Same model (conv 5x5x32, pool, conv 5x5x64, pool, dense 1024, dense 10),
same batch and optimizer (Adam 1e-3) as labs/01-single-device, on random
data of the right shape. Prints one line: `images_per_second N`.
flowlab never needs Python; this is only the reference beside it.
"""
import argparse
import time

import torch
import torch.nn as nn


def model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda for an NVIDIA GPU")
    parser.add_argument("--compile", action="store_true",
                        help="run the step through torch.compile (PyTorch 2.x; compiled before timing)")
    args = parser.parse_args()
    dev = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    net = model().to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    images = torch.rand(args.batch_size, 1, 28, 28, device=dev)
    labels = torch.randint(0, 10, (args.batch_size,), device=dev)

    forward = torch.compile(net) if args.compile else net

    def step():
        opt.zero_grad()
        loss = loss_fn(forward(images), labels)
        loss.backward()
        opt.step()
        if dev.type == "cuda":  # time the work, not its launch
            torch.cuda.synchronize()

    for _ in range(3):  # warm-up
        step()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    times.sort()
    print("images_per_second %.1f" % (args.batch_size / times[len(times) // 2]))


if __name__ == "__main__":
    main()
