"""The words every check shares: the kinds of finding, the compiled runs audit makes, the official pages, and what no
audit can see.

Not here: the checks themselves, and advice (:mod:`.advice`).
"""

from __future__ import annotations

from ..lessons import notebook_about


COMPILE_MODES = (("aot_eager", False), ("aot_eager", True), ("inductor", False), ("inductor", True))


EAGER = "eager"              # calling the op eagerly raised


DECLARATION = "declaration"  # what the kernel writes against what its schema declares


OPCHECK = "opcheck"          # a torch.library.opcheck test failed: "opcheck:<the test>"


COMPILE = "compile"          # a compiled run raised, or its result differs from eager's


ALIASING = "aliasing"        # a clone of a written argument passed in another argument's place (pytorch #198031)


MEMORY = "memory"            # an output shares memory with an input, and the schema does not declare it


INPUT = "input"              # what was passed cannot be audited: nothing was checked


NOTE = "note"                # a limit of this audit, not a defect: it goes to "not checkable here"


FULLGRAPH = "fullgraph"      # the doctor's: a graph break at the op, named (fullgraph=True)


FAKE = "fake"                # the doctor's: the fake kernel on the meta device and a second dtype, "fake:dtype"


GRAPH_BREAK = "Dynamo ran it eagerly at a graph break"   # in both notes (the count is the note's broke_in)


GRAPH_BREAK_NOTE = (f"the op under torch.compile: {GRAPH_BREAK} in every compiled run, so the compile checks saw "
                    "nothing of it")


GRAPH_BREAK_SOME = (f"the op under torch.compile: {GRAPH_BREAK} in {{k}} of the {{n}} compiled runs ({{runs}}), so "
                    "those saw nothing of it")


CANNOT_SEE = ("Python side effects inside a kernel declared pure, and writes that happen only for other "
              f"inputs: give such ops an effect (notebook {notebook_about('effects').number}) and audit them on "
              "several inputs.")


LIBRARY_DOCS = "https://docs.pytorch.org/docs/stable/library.html"


TUTORIAL = "https://docs.pytorch.org/tutorials/advanced/custom_ops_landing_page.html"


FAKE_DOCS = f"{LIBRARY_DOCS}#torch.library.register_fake"


INPUT_DOCS = f"{LIBRARY_DOCS}#torch.library.opcheck"   # what inputs an op is checked on, as opcheck takes them


def learn_more(topic: str | None) -> str:
    """The lab's notebook that teaches ``topic``, as a finding's "learn more" line ("" for no topic)."""
    if topic is None:
        return ""
    lesson = notebook_about(topic)
    return f"the torch.compile × custom ops lab, notebook {lesson.number} ({lesson.title})"
