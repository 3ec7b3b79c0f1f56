"""Sample inputs for bitsandbytes' operators, from bitsandbytes' own tests/test_ops.py (0.50.2), shrunk.

``SAMPLES`` maps each overload's qualified name to a list of ``(args, kwargs)`` calls, as
``torch.library.opcheck`` takes them. Only ops with a CPU kernel are listed: int8_double_quant and the .out
overloads of dequantize_blockwise, dequantize_4bit and gemv_4bit have none in 0.50.2 (NotImplementedError).
"""

import torch

import bitsandbytes  # noqa: F401 - registers torch.ops.bitsandbytes.*
from bitsandbytes import functional as F


def _int8(*shape):
    return torch.randint(-128, 127, shape, dtype=torch.int8)


def _samples():
    torch.manual_seed(0)
    A, B = _int8(10, 20), _int8(30, 20)
    half = torch.randn(10, 20, dtype=torch.float16)
    half[1][0] = 1000.0
    code = F.create_dynamic_map()
    blocks = torch.randn(64, 256)
    q8, absmax8 = torch.ops.bitsandbytes.quantize_blockwise(blocks, code, 256)
    w = torch.randn(64, 64)
    q4, absmax4 = torch.ops.bitsandbytes.quantize_4bit(w, 64, "nf4", torch.uint8)
    x = torch.randn(1, 1, 64)
    code4 = F.get_4bit_type("nf4", device="cpu", blocksize=64)
    n = 512   # two of the CPU kernel's 256-element blocks
    adam = ("adam",)
    hyper = dict(beta1=0.9, beta2=0.999, beta3=0.0, alpha=0.0, eps=1e-8)
    return {
        "bitsandbytes::int8_linear_matmul": [((A, B), {})],
        "bitsandbytes::int8_linear_matmul.out": [((A, B, torch.empty(10, 30, dtype=torch.int32)), {})],
        "bitsandbytes::int8_vectorwise_quant": [((half,), {}), ((half, 6.0), {})],
        "bitsandbytes::int8_vectorwise_dequant": [((A, torch.rand(10) * 127), {})],
        "bitsandbytes::int8_mm_dequant": [((torch.randint(-128, 127, (16, 16), dtype=torch.int32),
                                            torch.randn(16), torch.randn(16)), {})],
        "bitsandbytes::int8_scaled_mm": [((A, B, torch.randn(10), torch.randn(30), torch.randn(30), torch.float32),
                                          {})],
        "bitsandbytes::quantize_blockwise": [((blocks, code, 256), {})],
        "bitsandbytes::dequantize_blockwise": [((q8, absmax8, code, 256, torch.float32), {})],
        "bitsandbytes::quantize_4bit": [((w, 64, "nf4", torch.uint8), {})],
        "bitsandbytes::dequantize_4bit": [((q4, absmax4, 64, "nf4", [64, 64], torch.float32), {})],
        "bitsandbytes::gemv_4bit": [((x, q4, [64, 64], absmax4, code4, 64), {})],
        "bitsandbytes::optimizer_update_32bit": [(adam + (
            torch.randn(n), torch.randn(n), torch.zeros(n), torch.zeros(n),
            None, 0.0, 0.0, *hyper.values(), 0.0, 1, 1e-3, 1.0), {})],
        "bitsandbytes::optimizer_update_8bit_blockwise": [(adam + (
            torch.randn(n), torch.randn(n), torch.full((n,), 128, dtype=torch.uint8), torch.zeros(n, dtype=torch.uint8),
            *hyper.values(), 1, 1e-3, F.create_dynamic_map(signed=True), F.create_dynamic_map(signed=False),
            torch.zeros(n // 256), torch.zeros(n // 256), 0.0, 1.0), {})],
        "bitsandbytes::gemm_4bit": [((torch.randn(2, 2, 64), q4, [64, 64], absmax4, 64, "nf4"), {"bias": None})],
    }


SAMPLES = _samples()
