"""Sample inputs for torchao's Python-registered operators that run on the CPU (torchao 0.18.0).

``SAMPLES`` maps each overload's qualified name to ``(args, kwargs)`` calls, as opcheck takes them.
torchao's C++ ops (``float8_linear_cpu``, ``da8w4_linear_cpu``, ``_scaled_embedding_bag``,
``qscaled_dot_product``) need its compiled extension, which has only a Meta kernel here: not listed.
"""

import torch

import torchao.quantization  # noqa: F401 - registers torch.ops.torchao.*


def _samples():
    torch.manual_seed(0)
    x = torch.randn(4, 64)
    scale, zero = torch.ops.torchao.choose_qparams_affine(x, "ASYMMETRIC", [1, 32], torch.uint8, 0, 255)
    q = torch.ops.torchao.quantize_affine(x, [1, 32], scale, zero, torch.uint8, 0, 255)
    scale8 = torch.ops.torchao.choose_scale_float8(x, [1, 64])
    q8 = torch.ops.torchao.quantize_affine_float8_non_decomposed(x, scale8)
    return {
        "torchao::choose_qparams_affine": [((x, "ASYMMETRIC", [1, 32], torch.uint8, 0, 255), {}),
                                           ((x, "SYMMETRIC", [1, 32], torch.int8), {})],
        "torchao::quantize_affine": [((x, [1, 32], scale, zero, torch.uint8, 0, 255), {})],
        "torchao::dequantize_affine": [((q, [1, 32], scale, zero, torch.uint8, 0, 255), {})],
        "torchao::choose_scale_float8": [((x, [1, 64]), {})],
        "torchao::quantize_affine_float8_non_decomposed": [((x, scale8), {})],
        "torchao::dequantize_affine_float8_non_decomposed": [((q8, scale8), {})],
    }


SAMPLES = _samples()
