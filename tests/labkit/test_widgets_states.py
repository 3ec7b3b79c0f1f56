"""Every state of every widget says only what is true, and nothing its own panel contradicts.

For each state, the panel (the HTML a learner reads) is parsed and checked against sources that do not go
through labkit's report:
- a replica of the experiment in plain torch (its own ``custom_op``, a counter inside its kernel, plain
  ``torch.compile``): the kernel runs, eager and compiled, and whether eager and compiled agree or raise;
- the panel's own printed graphs and code: "kept" means the op is in that stage's printed code, "removed"
  that the code is printed and the op is not in it, any other mark that no code is printed for the stage;
- for the naming lab, ``x`` itself: it starts at zeros and the kernel adds 1, so the value of ``x`` counts
  the kernel's runs, and the story must agree with the table.
Words that cannot be misread: no bare call index ("calls 0, 1") next to kernel-run counts, no "—" mark.
"""

import html
import inspect
import itertools
import json
import re

import pytest
import torch
from torch._dynamo.backends.registry import lookup_backend

import labkit
from panel_check import Panel, contradictions
from labkit import experiments as e
from labkit import views
from labkit import widgets as w
from repo import ROOT
from showings import widget_classes

pytestmark = pytest.mark.slow
# --- plain-torch replicas ------------------------------------------------------------------------

_serial = itertools.count()


def replica_op(fields: dict):
    """A plain custom_op with the kernel labkit's catalogue describes, counting its runs in a list."""
    writes, returns = fields.get("writes", ()), fields.get("returns", "none")
    runs = []

    def kernel(x):
        runs.append(1)
        result = x * 2 if returns == "fresh" else x[x > 0] if returns == "data-dependent" else None
        if "x" in writes:
            x.add_(1)
        return x if returns == "input" else result

    kernel.__signature__ = inspect.Signature(
        [inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=torch.Tensor)],
        return_annotation=None if returns == "none" else torch.Tensor)
    name = f"t_ws::op{next(_serial)}"
    op = torch.library.custom_op(name, kernel, mutates_args=fields.get("mutates_args", ()))
    if fields.get("fake", True):
        op.register_fake(lambda x: x.new_empty(torch.library.get_ctx().new_dynamic_size())
                         if returns == "data-dependent" else torch.empty_like(x) if returns == "fresh"
                         else x if returns == "input" else None)
    if fields.get("effect") == "side_effect":
        torch.fx.node.has_side_effect(getattr(torch.ops.t_ws, name.split("::")[1]).default)
    elif fields.get("effect") == "ordered":
        from torch._library.effects import EffectType
        op.register_effect(EffectType.ORDERED)
    return op, runs


def replica_run(program, make_inputs, backend, dynamic, fullgraph=False):
    """(eager runs, compiled runs, eager raised, compiled raised, agree, graphs per call) in plain torch."""
    op, runs = replica_op(program[1])
    fn = program[0](op)
    eager, eager_raised = [], False
    for x in make_inputs():
        try:
            eager.append((fn(x), x))
        except RuntimeError:
            eager_raised = True
            break
    eager_runs, runs[:] = len(runs), []
    graphs, per_call = [], []
    real = lookup_backend(backend)

    def counting(gm, example_inputs):
        graphs.append(gm)
        return real(gm, example_inputs)

    torch.compiler.reset()   # every replica program shares its code object: no earlier state's graphs or limits
    compiled_fn = torch.compile(program[0](op), backend=counting, dynamic=dynamic, fullgraph=fullgraph)
    compiled, compiled_raised = [], False
    with torch._inductor.config.patch(fx_graph_cache=False), torch._functorch.config.patch(enable_autograd_cache=False):
        for x in make_inputs():
            before = len(graphs)
            try:
                compiled.append((compiled_fn(x), x))
            except Exception:  # noqa: BLE001 - torch raised: that is the fact to compare
                compiled_raised = True
                per_call.append(len(graphs) - before)
                break
            per_call.append(len(graphs) - before)
    agree = None
    if not eager_raised and not compiled_raised:
        agree = all(torch.equal(a, b) and torch.equal(xa, xb) for (a, xa), (b, xb) in zip(eager, compiled))
    return eager_runs, len(runs), eager_raised, compiled_raised, agree, per_call


GREEN = "#1b7f3b"
_TIMES = {"once": 1, "twice": 2}
# What a reader of each language reads in a panel that says: eager raised, torch.compile raised, eager and compiled
# agree, torch raised (the headline, the picture's alt text), a side effect ran N and M times, removed as dead code.
WORDS = {"en": {"eager raised": "Eager: torch raised", "compiled raised": "torch.compile: ",
                "agree": ("eager and compiled agree", "outputs and inputs agree"), "raised": "raised",
                "ran": r"ran (\w+) (?:times )?eagerly and (\w+)", "side effect": "side effect",
                "dead code": "removed as dead code"},
         "zh-CN": {"eager raised": "Eager：torch 在", "compiled raised": "torch.compile：",
                   "agree": ("eager 与编译后的结果一致", "输出和输入一致"), "raised": "报错",
                   "ran": r"eager 下运行了 (\d+) 次，编译后运行了 (\d+) 次", "side effect": "副作用",
                   "dead code": "作为死代码被删除"}}


def headline(page: str) -> tuple[str | None, str]:
    """The panel's headline as a learner reads it: its first bold coloured line (colour, words)."""
    found = re.search(r'<p style="color:(#[0-9a-f]{6});font-weight:bold[^"]*">(.*?)</p>', page, re.S)
    return (found.group(1), html.unescape(found.group(2))) if found else (None, "")


def check_headline(page: str, truth, side_effect: bool, state, language: str = "en") -> list[str]:
    """The headline is green only where nothing a user can observe differs: outputs, inputs, a stage that raised,
    and (for an op with a Python side effect) how many times its kernel ran; its words name what differs."""
    eager_runs, compiled_runs, eager_raised, compiled_raised, agree, _ = truth
    colour, words = headline(page)
    reads = WORDS[language]
    raised = eager_raised or compiled_raised
    lost = side_effect and eager_runs != compiled_runs
    found = [f"{state}: the panel has no headline"] if colour is None else []
    if colour is not None and (colour == GREEN) != (not raised and bool(agree) and not lost):
        found.append(f"{state}: the headline is {'green' if colour == GREEN else 'not green'} ({words!r}), but "
                     f"raised={raised}, agree={agree}, side effect ran eager {eager_runs} / compiled {compiled_runs}")
    if raised and reads["raised"] not in words:
        found.append(f"{state}: torch raised, and the headline does not say so: {words!r}")
    if lost:
        counts = re.search(reads["ran"], words)
        said = [_TIMES.get(c, int(c) if c.isdigit() else c) for c in counts.groups()] if counts else None
        if reads["side effect"] not in words or said != [eager_runs, compiled_runs]:
            found.append(f"{state}: the side effect ran {eager_runs} / {compiled_runs} times; the headline: {words!r}")
    if colour == GREEN and not side_effect and compiled_runs == 0 < eager_runs and reads["dead code"] not in words:
        found.append(f"{state}: green over a removed kernel without saying 'removed as dead code': {words!r}")
    if compiled_raised:
        picture = re.search(r"<img alt='([^']*)'", page)
        if picture is None or reads["raised"] not in picture.group(1):
            found.append(f"{state}: torch raised compiled, and the fate strip marks no stage that raised "
                         f"({picture.group(1) if picture else 'no picture'})")
    return found


def check_panel(page: str, op_name: str, truth, state, side_effect: bool = False, language: str = "en") -> list[str]:
    """The contradictions between a panel and the truth (a plain-torch replica), and within the panel, read in the
    panel's ``language``."""
    panel = Panel(page, language)
    found = contradictions(page, op_name, state, language) + check_headline(page, truth, side_effect, state, language)
    reads = WORDS[language]
    said = " ".join("".join(panel.text).split())
    eager_runs, compiled_runs, eager_raised, compiled_raised, agree, per_call = truth
    row = panel.row(op_name)
    if row.get("kernel runs, eager") != str(eager_runs):
        found.append(f"{state}: kernel runs, eager {row.get('kernel runs, eager')} (counted: {eager_runs})")
    if row.get("kernel runs, compiled") != str(compiled_runs):
        found.append(f"{state}: kernel runs, compiled {row.get('kernel runs, compiled')} (counted: {compiled_runs})")
    if (reads["eager raised"] in said) != eager_raised:
        found.append(f"{state}: the panel {'does not say' if eager_raised else 'says'} eager raised")
    if (reads["compiled raised"] in said) != compiled_raised:
        found.append(f"{state}: the panel {'does not say' if compiled_raised else 'says'} torch.compile raised")
    if agree is not None and any(words in said for words in reads["agree"]) != agree:
        found.append(f"{state}: the panel's verdict disagrees with the replica (agree={agree})")
    return found


# The English a Chinese panel keeps: names of torch's stages, APIs and options, and the words Chinese PyTorch
# engineers write in English (eager, kernel, schema); code, op names and torch's own messages are left out before.
KEPT_IN_ENGLISH = {"Eager", "eager", "torch", "compile", "Dynamo", "AOTAutograd", "AOT", "Inductor", "kernel",
                   "backend", "dynamic", "inductor", "aot_eager", "True", "False", "schema", "fake", "mutates_args",
                   "register_fake", "unknown", "Python", "x", "None"}


def english_left(page: str, report) -> list[str]:
    """The English words a panel in Chinese shows outside code, op names and torch's messages."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(pre|code)[^>]*>.*?</\1>", " ", page, flags=re.S)))
    for error in (report.eager_error, report.error):
        if error is not None:
            text = text.replace(f"{error.type_name}: {error.message}", " ")
    return sorted({word for word in re.findall(r"[A-Za-z][A-Za-z_]*", text) if word not in KEPT_IN_ENGLISH})


def _declaration_inputs():
    return [torch.arange(4.0), torch.arange(6.0)]


DECLARATION_STATES = [dict(zip(("declaration", "backend", "dynamic"), values)) for values in
                      itertools.product(e.DECLARATIONS, ("aot_eager", "inductor"), e.DYNAMIC_CHOICES)]


@pytest.mark.parametrize("speaking", ["en", "zh-CN"])
def test_every_declaration_lab_state_is_true_and_consistent(speaking):
    """In English and in Chinese (labkit.use_language): the labels change, the states and what they show do not."""
    labkit.use_language(speaking)
    lab = w.DeclarationLab(namespace="t_ws_d")
    assert len(DECLARATION_STATES) == 36
    found = []
    try:
        for state in DECLARATION_STATES:
            lab.set(**state)
            name = e.declaration_spec(state["declaration"], "t_ws_d").name
            truth = replica_run((e.uses_result, e.DECLARATIONS[state["declaration"]][1]), _declaration_inputs,
                                state["backend"], e.DYNAMIC_CHOICES[state["dynamic"]])
            found += check_panel(lab.view.value, name, truth, state, language=speaking)
            if speaking != "en" and english_left(lab.view.value, lab.report):
                found.append(f"{state}: English in the {speaking} panel: {english_left(lab.view.value, lab.report)}")
            meaning = e.DECLARATIONS[state["declaration"]][0]
            if not re.match(r"(writes|is|declares)\b", meaning):
                found.append(f"{state}: 'the kernel {meaning}' lacks its verb")
    finally:
        labkit.use_language("en")
        lab.close()
        labkit.drop_namespace("t_ws_d")
    assert not found, f"{len(found)} contradictions:\n" + "\n".join(found)


DYNAMIC_STATES = [s for s in (dict(zip(("dynamic", "declaration", "op_kind", "fullgraph", "shapes"), values))
                              for values in itertools.product(e.DYNAMIC_CHOICES, e.DCE_DECLARATIONS, e.OP_KINDS,
                                                              e.FULLGRAPH_CHOICES, e.SHAPE_SEQUENCES))
                  if s["op_kind"] == "shape-following" or s["declaration"] == "pure, result unused"]


def has_python_side_effect(fields: dict) -> bool:
    """An op of the dynamic lab's catalogue that returns nothing and writes nothing runs for its side effect alone."""
    return fields.get("returns") == "none" and not fields.get("writes")


def test_the_ops_with_a_python_side_effect_are_those_that_return_and_write_nothing():
    assert {label for label, fields in e.DCE_DECLARATIONS.items() if has_python_side_effect(fields)} == \
        set(e.PYTHON_SIDE_EFFECT)


def test_every_dynamic_lab_state_is_true_and_consistent():
    """Each state's panel, in English as the lab drew it and in Chinese drawn from the same result."""
    lab = w.DynamicLab(namespace="t_ws_n")
    assert len(DYNAMIC_STATES) == 108
    found = []
    try:
        for state in DYNAMIC_STATES:
            lab.set(**state)
            op, report = lab.result()
            fields = dict(e.DCE_DECLARATIONS[state["declaration"]])
            if state["op_kind"] == "data-dependent":
                fields["returns"] = "data-dependent"
            sizes = e.SHAPE_SEQUENCES[state["shapes"]]
            truth = replica_run((e.discards_result, fields), lambda sizes=sizes: [torch.ones(n) for n in sizes],
                                "inductor", e.DYNAMIC_CHOICES[state["dynamic"]],
                                e.FULLGRAPH_CHOICES[state["fullgraph"]])
            found += check_panel(lab.view.value, op.name, truth, state, side_effect=has_python_side_effect(fields))
            with labkit.language.speaking("zh-CN"):   # the same result, drawn in Chinese
                chinese = lab.render(lab.result())
            found += check_panel(chinese, op.name, truth, state, side_effect=has_python_side_effect(fields),
                                 language="zh-CN")
            if english_left(chinese, report):
                found.append(f"{state}: English in the zh-CN panel: {english_left(chinese, report)}")
            if report.graphs_per_call != truth[5]:
                found.append(f"{state}: graphs per call {report.graphs_per_call} (a counting backend: {truth[5]})")
            if f"graphs compiled per call: {report.graphs_per_call}" not in html.unescape(re.sub("<[^>]+>", "",
                                                                                               lab.view.value)):
                found.append(f"{state}: the panel does not print its graphs per call")
    finally:
        lab.close()
        labkit.drop_namespace("t_ws_n")
    assert not found, f"{len(found)} contradictions:\n" + "\n".join(found)


# What a reader of each language reads in the naming lab's panel: a refused name, a silently wrong compile, the
# story's part before the cache, a step named, a step that differs from eager, declared pure, the call removed.
NAMING_WORDS = {"en": {"refused": "cannot be used", "silently wrong": "silently wrong", "as for": "As for the cache",
                       "step": "step {n}", "differs": r"differs? from eager", "declared pure": "declared pure",
                       "removed": "removed the call"},
                "zh-CN": {"refused": "不能用", "silently wrong": "静默地出错", "as for": "至于缓存",
                          "step": "第 {n} 步", "differs": "与 eager 不同", "declared pure": "声明为纯函数",
                          "removed": "删除了这次调用"}}


def test_every_naming_lab_setting_is_true_and_consistent():
    """Each setting's panel, in English as the lab drew it and in Chinese drawn from the same result."""
    lab = w.NamingLab(namespace="t_ws_m")
    settings = list(lab.every_state())
    assert len(settings) == 72
    found = []
    try:
        for values in settings:
            lab.set(**values)
            result = lab.outcome
            link = lab.lesson_link.outputs[0]["data"]["text/html"] if lab.lesson_link.outputs else ""
            found += check_naming_panel(lab.view.value, link, result, values, "en")
            with labkit.language.speaking("zh-CN"):
                page, lesson = lab.render(result), lab.lesson(result)
                link = views.lesson_link_html(*lesson) if lesson else ""
            found += check_naming_panel(page, link, result, values, "zh-CN")
    finally:
        lab.close()
    assert not found, f"{len(found)} contradictions:\n" + "\n".join(found)


def check_naming_panel(page: str, link: str, result, values, language: str) -> list[str]:
    """The naming lab's panel against ``x`` (zeros, plus 1 per kernel run) and the cache's hits, read in
    ``language``."""
    panel, reads, found = Panel(page, language), NAMING_WORDS[language], []
    said = " ".join("".join(panel.text).split())
    if result.problem:
        return [] if reads["refused"] in said else [f"{values}: a refused name is not said to be refused ({language})"]
    rows = next(t for t in panel.tables if t and t[0][:1] == ["step"])[1:]
    for step, cells in zip(result.steps, rows):
        runs, x_after = int(cells[2]), cells[3]
        if step.x_after != [float(runs)] * len(step.x_after):
            found.append(f"{values}: kernel runs {runs}, but x (zeros + 1 per run) ends {step.x_after}")
        if re.split(r" \(|（", x_after)[0] != str(step.x_after):
            found.append(f"{values}: the panel's x after {x_after} vs {step.x_after} ({language})")
        if (cells[4] == "hit: reused") != (step.cache_hits > 0):
            found.append(f"{values}: the cache column says {cells[4]!r}, hits {step.cache_hits} ({language})")
    found += check_other_reason(page, result.steps, values, link, reads)
    second = result.steps[1]
    if (reads["silently wrong"] in said) != (second.stale and not second.correct):
        found.append(f"{values}: the story's 'silently wrong' disagrees with x ({second.x_after} vs eager "
                     f"{second.x_after_eager}) ({language})")
    return found


NOTEBOOK_02 = json.loads((ROOT / "notebooks" / "02_mutates_args.ipynb").read_text())
HEADINGS_02 = {line.lstrip("#").strip().replace("`", "").replace(" ", "-")
               for cell in NOTEBOOK_02["cells"] if cell["cell_type"] == "markdown"
               for line in "".join(cell["source"]).splitlines() if line.startswith("## ")}


def check_other_reason(page: str, steps, values, link_html: str = "", reads=NAMING_WORDS["en"]) -> list[str]:
    """A row whose compiled x differs from eager's with no cache hit is wrong for its declaration, not its name: the
    story says so first (naming the step), with a link (under the view: ``link_html``) to the section of notebook 02
    that runs that mistake, before anything about the cache; where every row is right or wrong through the cache,
    it says nothing of the kind, and links nothing."""
    other = [i + 1 for i, step in enumerate(steps) if step.x_after != step.x_after_eager and not step.cache_hits]
    removed = [n for n in other if steps[n - 1].declared == "pure" and steps[n - 1].kernel_calls == 0]
    story_html = page.rsplit("<p", 1)[-1]
    story = html.unescape(re.sub("<[^>]+>", "", story_html.split(">", 1)[1]))
    links = re.findall(r"href='([^']*)'", story_html + link_html)
    found = []
    if other:
        before_cache = story.split(reads["as for"])[0].lower()
        if not all(reads["step"].format(n=n) in before_cache for n in other) or not re.search(reads["differs"],
                                                                                              before_cache):
            found.append(f"{values}: step(s) {other} are wrong, not through the cache, and the story does not say so "
                         f"first: {story!r}")
        if removed and not (reads["declared pure"] in before_cache and reads["removed"] in before_cache):
            found.append(f"{values}: step(s) {removed}, declared pure, never ran compiled: the story does not say "
                         f"the call was removed: {story!r}")
        targets = [link.split("#") for link in links]
        if not any(path == "02_mutates_args.ipynb" and anchor in HEADINGS_02 for path, *rest in targets
                   for anchor in rest):
            found.append(f"{values}: no link to a section of notebook 02 (links: {links})")
    elif re.search(reads["differs"], story) or links:
        found.append(f"{values}: every row is right or wrong through the cache, yet the story blames a declaration")
    return found


STATE_TESTS = {w.DeclarationLab: test_every_declaration_lab_state_is_true_and_consistent,
               w.DynamicLab: test_every_dynamic_lab_state_is_true_and_consistent,
               w.NamingLab: test_every_naming_lab_setting_is_true_and_consistent}


def test_every_widget_the_lab_shows_has_its_every_state_test():
    """A new entry in tools/showings.py's SHOWINGS with a new widget needs its every-state test here, checked against
    an independent replica in plain torch, as the three above are."""
    missing = [cls.__name__ for cls in widget_classes() if cls not in STATE_TESTS]
    assert missing == [], f"no every-state test for {missing}: write one here and add it to STATE_TESTS"
