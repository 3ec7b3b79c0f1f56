"""The pictures of notebooks 10 and 11 reflect their input: every label drawn comes from the tensors,
the package or the profile given, never from a template."""

import re

import torch

from labkit import pictures


def _texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def _boxes(texts) -> list[str]:
    return [t for t in texts if re.fullmatch(r"\d+,\d+,\d+,\d+", t)]


# --- 10: memory_order ---------------------------------------------------------------------------------------


def test_memory_order_reads_each_tensors_own_strides():
    x = torch.randn(2, 3, 4, 4)
    nhwc = x.contiguous(memory_format=torch.channels_last)
    texts = _texts(pictures.memory_order({"plain": x, "channels last": nhwc}, slots=5))
    assert f"plain: strides {x.stride()}" in texts
    assert f"channels last: strides {nhwc.stride()}" in texts
    boxes = _boxes(texts)
    assert boxes[:5] == ["0,0,0,0", "0,0,0,1", "0,0,0,2", "0,0,0,3", "0,0,1,0"], "NCHW walks w first"
    assert boxes[5:10] == ["0,0,0,0", "0,1,0,0", "0,2,0,0", "0,0,0,1", "0,1,0,1"], "NHWC walks c first"


def test_memory_order_follows_made_up_strides_too():
    odd = torch.empty_strided((1, 2, 1, 3), (6, 1, 6, 2))      # c fastest, then w
    texts = _texts(pictures.memory_order({"odd": odd}, slots=4))
    assert "odd: strides (6, 1, 6, 2)" in texts
    assert _boxes(texts) == ["0,0,0,0", "0,1,0,0", "0,0,0,1", "0,1,0,1"]
