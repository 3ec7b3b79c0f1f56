"""A fixed module of custom ops for tools/findings_record.py: the doctor runs on it as a project's CI would.

One op for each kind of outcome the doctor reports: clean, an undeclared write, inputs generated from the schema,
no kernel for this machine (a skip), a graph break at a data-dependent size, a fake kernel that forgets the dtype,
an output that views an input undeclared, a kernel that raises on the sample, and a correct op on float8 inputs
(a note of opcheck's own limit).
"""

import torch


@torch.library.custom_op("rec::good", mutates_args=("out",))
def good(x: torch.Tensor, alpha: float, out: torch.Tensor) -> None:
    out.copy_(x * alpha)


@torch.library.custom_op("rec::lies", mutates_args=())
def lies(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x * 2)


@torch.library.custom_op("rec::listy", mutates_args=())
def listy(xs: list[torch.Tensor]) -> torch.Tensor:
    return torch.stack(xs).sum(0)


listy.register_fake(lambda xs: torch.empty_like(xs[0]))


@torch.library.custom_op("rec::count_positives", mutates_args=())
def count_positives(x: torch.Tensor) -> torch.Tensor:
    return x[x > 0].clone()


count_positives.register_fake(lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size()))


@torch.library.custom_op("rec::forgets_dtype", mutates_args=())
def forgets_dtype(x: torch.Tensor) -> torch.Tensor:
    return x * 2


forgets_dtype.register_fake(lambda x: x.new_empty(x.shape, dtype=torch.float32))


@torch.library.custom_op("rec::raises", mutates_args=())
def raises(x: torch.Tensor) -> torch.Tensor:
    raise ValueError("rec::raises refuses every input")


raises.register_fake(lambda x: torch.empty_like(x))

lib = torch.library.Library("rec", "FRAGMENT")
lib.define("gpu_only(Tensor x) -> Tensor")
lib.impl("gpu_only", lambda x: x * 2, "CUDA")
torch.library.register_fake("rec::gpu_only", lambda x: torch.empty_like(x), lib=lib)
lib.define("views(Tensor x) -> Tensor")
lib.impl("views", lambda x: x.view(-1), "CompositeExplicitAutograd")
torch.library.register_fake("rec::views", lambda x: x.view(-1), lib=lib)

X, OUT = torch.arange(4.0), torch.zeros(4)
SAMPLES = {
    good: [((X, 2.0, OUT), {})],
    lies: [((X, OUT), {})],
    count_positives: [((torch.tensor([1.0, -2.0, 3.0, -4.0]),), {})],
    forgets_dtype: [((torch.arange(3.0),), {})],
    raises: [((X,), {})],
    "rec::gpu_only": [((torch.ones(2),), {})],
    "rec::views": [((torch.arange(6.0).reshape(2, 3),), {})],
}


@torch.library.custom_op("rec::widen", mutates_args=())
def widen(x: torch.Tensor) -> torch.Tensor:   # correct, but opcheck's test_schema cannot run on float8 CPU inputs
    return x.to(torch.float32)


widen.register_fake(lambda x: torch.empty(x.shape, dtype=torch.float32))
SAMPLES[widen] = [((torch.arange(4.0).to(torch.float8_e4m3fn),), {})]
