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


# --- 11: package_lookup, and the package reader it draws from ----------------------------------------------


def test_package_lookup_draws_the_calls_and_the_registry_it_is_given():
    calls = [{"target": "made::up", "inputs": ["a", "b"], "via proxy executor": True},
             {"target": "other::op", "inputs": ["x"], "via proxy executor": False}]
    texts = _texts(pictures.package_lookup("thing.pt2", calls, {"made::up": "made::up(Tensor a, Tensor b) -> Tensor"}))
    assert "thing.pt2: generated C++" in texts
    assert "made::up(a, b)" in texts and "other::op(x)" in texts
    assert "made::up(Tensor a, Tensor b) -> Tensor" in texts, "what is registered, from the dict given"
    assert "nothing: the package cannot load" in texts, "an op not registered says so"
    assert texts.count("proxy executor call") == 1 and texts.count("direct call") == 1


def test_op_calls_reads_a_packages_json_and_cpp(tmp_path):
    import json
    import zipfile

    from labkit import packages

    path = tmp_path / "p.pt2"
    nodes = {"nodes": [{"node": {"target": "ns::op", "inputs": [{"name": "x"}, {"name": "alpha"}]}}]}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data/model.json", json.dumps(nodes))
        archive.writestr("data/model.cpp", "aoti_torch_proxy_executor_call_function(...);")
    assert packages.op_calls(str(path)) == [{"target": "ns::op", "inputs": ["x", "alpha"], "via proxy executor": True}]
    assert packages.registered_now(packages.op_calls(str(path))) == {"ns::op": None}


def test_load_without_a_package_is_one_sentence(tmp_path):
    from labkit import packages

    for missing in (None, str(tmp_path / "gone.pt2")):
        try:
            packages.load(missing)
        except packages.NoPackage as error:
            assert error._render_traceback_() == [f"NoPackage: {error}"]
            assert "run the cell that builds the package first" in str(error)
        else:
            raise AssertionError("load of a missing package returned")
