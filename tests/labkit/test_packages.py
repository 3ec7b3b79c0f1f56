"""labkit.packages: what notebook 11 reads from an AOTInductor package (its op calls, what is registered now),
and a missing package as one sentence."""


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
