#!/usr/bin/env python3
"""pytorch_cnn.py: the chapter 1 model's training step in PyTorch, for `make bench`.

Same model (conv 5x5x32, pool, conv 5x5x64, pool, dense 1024, dense 10),
same batch and optimizer (Adam 1e-3) as labs/01-single-device. Each step
does what the lab's step does: copies a uint8 batch of images in from
(pinned) host memory, scales it to [0, 1], runs forward, backward and Adam,
and reads the loss back. Prints one line: `images_per_second N`.

--mode picks how PyTorch runs the step, from plain to what an expert does:
  eager          op by op, the default Adam (foreach)
  fused          op by op, Adam as one fused kernel (fused=True)
  compile        the model through torch.compile (default mode)
  max-autotune   torch.compile(mode="max-autotune"): Triton templates tuned
                 per shape, and CUDA graphs
  cuda-graph     the whole step (copy in, forward, backward, fused capturable
                 Adam, loss) captured once with torch.cuda.graph and replayed
The last three need PyTorch 2.x and CUDA; a mode that cannot run here
exits 3 with the reason on stderr.
flowlab never needs Python; this is only the reference beside it.
"""
import argparse
import sys
import time

import torch
import torch.nn as nn

MODES = ("eager", "fused", "compile", "max-autotune", "cuda-graph")


def model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))


def cannot(why):
    print("pytorch_cnn.py: %s" % why, file=sys.stderr)
    sys.exit(3)


class Step:
    """One training step on a uint8 batch that waits in host memory."""

    def __init__(self, args, dev):
        self.dev, self.mode = dev, args.mode
        self.net = model().to(dev)
        cuda = dev.type == "cuda"
        adam = {"lr": 1e-3}
        if args.mode in ("fused", "cuda-graph") and cuda:
            adam["fused"] = True
        if args.mode == "cuda-graph":
            adam["capturable"] = True
        self.opt = torch.optim.Adam(self.net.parameters(), **adam)
        self.loss_fn = nn.CrossEntropyLoss()
        n = args.batch_size
        self.host_images = torch.randint(0, 256, (n, 1, 28, 28), dtype=torch.uint8, pin_memory=cuda)
        self.host_labels = torch.randint(0, 10, (n,), pin_memory=cuda)
        self.images = torch.empty((n, 1, 28, 28), dtype=torch.uint8, device=dev)
        self.labels = torch.empty((n,), dtype=torch.int64, device=dev)
        self.forward = self.net
        if args.mode == "compile":
            self.forward = torch.compile(self.net)
        elif args.mode == "max-autotune":
            self.forward = torch.compile(self.net, mode="max-autotune")
        self.graph = None

    def compute(self):
        """Forward, backward and the update on the batch already on the device."""
        if self.graph is None:  # captured, backward writes fresh gradients each replay
            self.opt.zero_grad()
        x = self.images.float().div_(255.0)
        loss = self.loss_fn(self.forward(x), self.labels)
        loss.backward()
        self.opt.step()
        return loss

    def copy_in(self):
        self.images.copy_(self.host_images, non_blocking=True)
        self.labels.copy_(self.host_labels, non_blocking=True)

    def capture(self):
        """Warms up on a side stream (PyTorch's rule for capture), then captures.
        The gradients are set to None first, so that backward makes them from
        the graph's own memory pool (torch.cuda.graph's whole-network recipe)."""
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.copy_in()
                self.compute()
        torch.cuda.current_stream().wait_stream(side)
        self.opt.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.copy_in()
            self.loss = self.compute()

    def __call__(self):
        if self.graph is not None:
            self.graph.replay()
            return self.loss.item()  # waits for the step, as the lab's fetch does
        self.copy_in()
        return self.compute().item()


def check_mode(args, dev):
    if args.mode in ("compile", "max-autotune", "cuda-graph") and not torch.__version__[0] >= "2":
        cannot("--mode %s needs PyTorch 2.x (this is %s)" % (args.mode, torch.__version__))
    if args.mode in ("max-autotune", "cuda-graph", "fused") and dev.type != "cuda":
        cannot("--mode %s is for CUDA (--device cuda)" % args.mode)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda for an NVIDIA GPU")
    parser.add_argument("--mode", default="eager", choices=MODES, help="how PyTorch runs the step (see above)")
    parser.add_argument("--compile", action="store_true", help="the same as --mode compile")
    args = parser.parse_args()
    if args.compile:
        args.mode = "compile"
    dev = torch.device(args.device)
    check_mode(args, dev)
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    # TF32 for convolutions is PyTorch's default; matrix products follow the
    # same policy here, as TensorFlow's do and flowlab's do.
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    step = Step(args, dev)
    try:
        if args.mode == "cuda-graph":
            step.capture()
        for _ in range(3):  # warm-up (and, compiled, the compilation)
            step()
    except Exception as e:  # a mode that does not compile or capture here
        cannot("--mode %s failed: %s: %s" % (args.mode, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    times.sort()
    print("images_per_second %.1f" % (args.batch_size / times[len(times) // 2]))


if __name__ == "__main__":
    main()
