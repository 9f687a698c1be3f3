"""docs/python.md's worked example runs as written, with a stand-in for torch (no GPU here): the
API it uses exists, and what it prints follows the warm-up window it asks for."""
import os
import re

from conftest import run_python

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")

# Just enough of torch for the example's model, optimizer and tensors: each call returns itself.
FAKE_TORCH = """
import sys, types
class Anything:
    def __init__(self, *args, **kwargs): pass
    def __call__(self, *args, **kwargs): return self
    def __getattr__(self, name): return self
    def __iter__(self): return iter(())
fake = types.ModuleType("torch")
fake.nn = types.SimpleNamespace(Sequential=Anything, Linear=Anything, GELU=Anything)
fake.optim = types.SimpleNamespace(SGD=Anything)
fake.randn = Anything
sys.modules["torch"] = fake
"""


def example():
    with open(DOCS) as f:
        text = f.read()
    section = text.split("## Per-range GPU time every N steps", 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


def test_the_worked_example_runs_and_logs_every_50_steps():
    p = run_python(FAKE_TORCH + example(), env={"CUSCOPE_PRINT": "0"})
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if re.match(r"^ *\d+ step/", line)]
    assert [(r[0], r[1], r[3]) for r in rows] == [
        (str(step), path, str(step - 3))  # 3 warm-up steps left out
        for step in (50, 100, 150, 200) for path in ("step/forward", "step/backward", "step/optimizer")]
