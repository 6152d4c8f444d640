"""torch_common.py - what the PyTorch clients (tests/clients/torch_*.py) share: arguments, the
training loop, and the bytes read back, printed so that a run without cufold and one under it can
be compared bit for bit (tests/clients/torch_run.sh). On the software device the kernels are
no-ops (SIMCUDA_MACHINE_CODE=noop), so the values are meaningless but the bytes must still match:
copies, memsets and the allocator's reuse of memory are exact."""
import hashlib
import struct
import sys
import time

import torch


def steps_from_argv(default=20):
    return int(sys.argv[1]) if len(sys.argv) > 1 else default


def train(name, model, make_batch, loss_fn, opt, steps):
    """Run steps training steps; print one line per step (the loss's bytes, read back every step)
    and one with a hash of every parameter read back at the end; the mean wall time of a step after
    the first two goes to stderr (step_us), so that stdout compares bit for bit."""
    torch.manual_seed(0)
    batches = [make_batch(i) for i in range(4)]
    t0 = time.perf_counter()
    for step in range(steps):
        if step == min(2, steps - 1):
            t0 = time.perf_counter()  # the first steps warm up (allocator, cufold's recording)
        x, y = batches[step % len(batches)]
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(*x), y)
        loss.backward()
        opt.step()
        v = loss.item()  # a device-to-host read every step, as training loops log
        print("%s step %d loss %s" % (name, step, struct.pack("<d", v).hex()))
    timed = max(steps - min(2, steps - 1), 1)
    print("%s step_us %.1f" % (name, (time.perf_counter() - t0) * 1e6 / timed), file=sys.stderr)
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(bytes(p.detach().cpu().contiguous().untyped_storage()))
    print("%s params %s" % (name, h.hexdigest()))
