"""The child side of bench/torch_overhead.py: one configuration's PyTorch training steps in this
process, timed, and what this Python's torch says of itself (the probe).

The step: a small, launch-bound transformer-ish training step on CUDA (layer norm, linear layers,
scaled_dot_product_attention, a GELU MLP, a loss, backward, SGD), its regions marked with
torch.cuda.nvtx.range (no-ops with no NVTX tool attached) or, for python_api, cuscope.scope; the
same code in every configuration. Each step ends with torch.cuda.synchronize(); its time is
time.perf_counter_ns() around it.

Never here: the rounds, the statistics or any tool's set-up beyond entering torch.profiler around
the timed steps (the parent starts each child under its tool: torch_overhead.py).
"""
import json
import platform
import sys
import time

SKIPPED = 77
BATCH, SEQ, DIM, HEADS, LAYERS = 4, 64, 128, 4, 2
MODEL = {"batch": BATCH, "seq": SEQ, "dim": DIM, "heads": HEADS, "layers": LAYERS}


def probe():
    """({python, torch, cuda, gpu}, '') when torch with CUDA is importable here, else (None, why not)."""
    try:
        import torch
    except Exception as e:  # an ImportError, or a library torch needs that fails to load
        return None, f"torch with CUDA is not importable ({type(e).__name__}: {e})"
    if not torch.cuda.is_available():
        return None, f"torch with CUDA is not importable (torch {torch.__version__} sees no CUDA device)"
    return {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0)}, ""


def make_step(torch, region):
    """One training step, its regions entered through region(name)."""
    F = torch.nn.functional
    torch.manual_seed(0)
    layers = [torch.nn.ModuleDict({
        "norm1": torch.nn.LayerNorm(DIM), "qkv": torch.nn.Linear(DIM, 3 * DIM), "out": torch.nn.Linear(DIM, DIM),
        "norm2": torch.nn.LayerNorm(DIM), "up": torch.nn.Linear(DIM, 4 * DIM), "down": torch.nn.Linear(4 * DIM, DIM),
    }).cuda() for _ in range(LAYERS)]
    opt = torch.optim.SGD([p for layer in layers for p in layer.parameters()], lr=1e-3)
    x = torch.randn(BATCH, SEQ, DIM, device="cuda")
    target = torch.randn(BATCH, SEQ, DIM, device="cuda")

    def heads(t):
        return t.view(BATCH, SEQ, HEADS, DIM // HEADS).transpose(1, 2)

    def attention(layer, h):
        q, k, v = layer["qkv"](layer["norm1"](h)).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        return h + layer["out"](a.transpose(1, 2).reshape(BATCH, SEQ, DIM))

    def mlp(layer, h):
        return h + layer["down"](F.gelu(layer["up"](layer["norm2"](h))))

    def step():
        with region("step"):
            with region("forward"):
                h = x
                for layer in layers:
                    with region("attention"):
                        h = attention(layer, h)
                    with region("mlp"):
                        h = mlp(layer, h)
            with region("loss"):
                loss = F.mse_loss(h, target)
            with region("backward"):
                loss.backward()
            with region("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()

    return step


def timed_steps(step, count):
    step_ns = []
    for _ in range(count):
        start = time.perf_counter_ns()
        step()
        step_ns.append(time.perf_counter_ns() - start)
    return step_ns


def run_child(config, warmup, steps, marks):
    """This configuration's warm-up, then its timed steps: their times in ns. `marks` gets the
    wall-clock time (time.time()) at which each phase ended: model (the model made), warmup,
    steps (and torch.profiler's exit, where it ran)."""
    import torch
    if config == "python_api":
        import cuscope  # from --python-package (PYTHONPATH)
        step = make_step(torch, cuscope.scope)
    else:
        step = make_step(torch, torch.cuda.nvtx.range)
    marks["model"] = time.time()
    for _ in range(warmup):
        step()
    marks["warmup"] = time.time()
    if config != "torch_profiler":
        step_ns = timed_steps(step, steps)
        marks["steps"] = time.time()
        return step_ns
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities):
        step_ns = timed_steps(step, steps)
        marks["steps"] = time.time()
    marks["profiler_exit"] = time.time()
    return step_ns


def child(config, warmup, steps):
    marks = {"main": time.time()}  # the parent reads where a child's wall time went from these
    versions, why_not = probe()
    marks["torch"] = time.time()  # torch imported, CUDA seen (not yet initialized)
    if versions is None:
        print(json.dumps({"skipped": why_not}))
        print(why_not, file=sys.stderr)
        return SKIPPED
    if config != "probe":
        versions.update(config=config, warmup=warmup, steps=steps,
                        step_ns=run_child(config, warmup, steps, marks))
    versions["marks"] = marks
    print(json.dumps(versions), flush=True)
    return 0
