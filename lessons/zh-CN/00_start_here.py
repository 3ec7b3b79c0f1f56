# %% [markdown] en="b940558d0a"
# # 00 · 从这里开始：自定义算子遇上 `torch.compile`
#
# 自定义算子可以对编译器撒个小谎，编译后的程序就会悄悄算出别的结果：不报错，也不警告。本笔记本带你亲眼看到问题出现、找出出在哪一步，再把它修好。
#
# **你将学到**
# - `mutates_args` 向编译器承诺了什么，违背承诺又会怎样；
# - `torch.compile` 的三个阶段（Dynamo、AOTAutograd、Inductor），以及算子可能在哪一步消失；
# - 如何在自己的项目里用 `torch.library.opcheck` 和 `TORCH_LOGS` 揪出这种谎言。
#
# **时间**：约 20 分钟。**所需**：仅此笔记本，CPU 即可运行。
#
# 请从上到下依次运行；第一个单元格检查你的环境。

# %% [markdown] en="1a19ff1caa"
# ## 1. 藏着秘密的算子
#
# `torch.library.custom_op` 把一个 Python 函数注册为算子，在编译器眼里它是一个不透明的步骤。它原地修改哪些参数，必须在 `mutates_args` 里写明。下面这个算子原地给 `x` 加 1，却声明自己什么都不改；一个列表记录它的 kernel 实际运行了几次：

# %% [markdown] en="9416b8d075"
# 函数在调用算子之后还会用到 `x`。把同一个函数分别以 eager 方式和编译方式各运行一次，各用一份独立的 `x`：

# %% [markdown] en="de511842c4"
# eager 模式下结果是 4。编译之后结果是 2，`x` 没有变，kernel 运行了 **0** 次。
#
# ## 2. 调用去哪儿了？
#
# `torch.compile` 分三个阶段。**Dynamo** 读取你的 Python 代码，记录成一张图。**AOTAutograd** 把图改写成纯函数式的形式，并删掉没有被用到的部分（即*死代码消除*）。**Inductor** 根据剩下的部分生成代码。本实验的辅助包 `labkit` 保留了每个阶段的图。`labkit.declare` 是 `custom_op` 的一种简写形式，`torch_source()` 把它还原成原生 torch 写法打印出来：

# %% [markdown] en="4be5516063"
# Dynamo 记录了这次调用。随后 AOTAutograd 看到一个不返回值、按声明也不修改任何东西的算子：在它看来这是一个无用节点。它删掉了这个节点，Inductor 也就从未调用它。（笔记本 02 会展示结果*确实*被用到的算子，以及读到 `x` 旧值的编译代码。）
#
# ## 3. 说实话
#
# 把这次写入声明出来（原生 torch 写法是 `mutates_args=("x",)`；用同一个名字再次声明会替换掉原来的算子）：

# %% [markdown] en="a3a8d2dbc3"
# `Tensor(a0!) x` 是 schema 里“`x` 会被写入”的写法。现在每个阶段都保留了这次调用。
#
# ## 练习：有两个参数的算子
#
# `nb00::fill(x, scratch)` 写入 `scratch`，只读取 `x`。它的 `mutates_args` 应该是什么？按 `custom_op` 接受的形式作答：参数名组成的元组，例如 `("a", "b")`。检查之前先预测：这里写成 `("x",)`，编译结果会和 eager 不一致吗？

# %% [markdown] en="c40060fcfa"
# ## 在你自己的项目中
#
# 上面这些离开 labkit 也能做到。**`torch.library.opcheck`** 用示例输入运行 kernel，它的 `test_schema` 能发现未声明的写入：

# %% [markdown] en="1575c2bbc4"
# **`TORCH_LOGS`** 会打印每个阶段的图：`TORCH_LOGS="graph_code,aot_graphs" python my_script.py`。在笔记本里，`labkit.torch_logs` 捕获同样的日志，供单元格读取：

# %% [markdown] en="e5b1dba286"
# ## 要点回顾
#
# - `mutates_args` 是一个承诺：列出算子原地修改的每一个参数，并且只列这些。
# - 违背它，编译后的程序就可能悄悄算错。这里的算子被当作死代码删掉了。
# - Dynamo、AOTAutograd、Inductor：算子可能在它们之间消失。`opcheck` 能揪出谎言，`TORCH_LOGS` 能展示每个阶段。
#
# ## 思考题
#
# 1. 编译器为什么相信 `mutates_args`，而不去检查 kernel 实际做了什么？
# 2. 一个什么都不返回、按声明也什么都不修改的算子，为什么可以放心删掉？
# 3. 为什么“编译结果和 eager 一致”并不能证明声明是对的？
# 4. labkit 为什么要在输入的副本上分别运行 eager 和编译版本，除了输出，事后还要比较输入本身？
#
# ## 路线图
# <!-- BEGIN map: generated from pyproject.toml [tool.lab] by tools/build_notebooks.py --facts: do not edit -->
#
# | 笔记本 | 要点 | 时间 |
# |---|---|---|
# | **00 · 从这里开始**（本篇） | 第一个静默 bug：调用在哪一步消失，以及怎么修 | 20 min |
# | 01 · 自定义算子与编译流水线 | `custom_op`、fake kernel、`opcheck`；Dynamo → AOTAutograd → Inductor；`TORCH_TRACE` 与 `tlparse` | 35 min |
# | 02 · `mutates_args` | 声明会改变什么，以及每种错误声明各会导致什么后果 | 40 min |
# | 03 · 别名与视图（英文） | 在视图上原地修改的算子；为什么输出不能是输入的别名；`x.add_(1); return x` | 25 min |
# | 04 · 算子名与编译缓存（英文） | 算子名就是它的身份；过期的编译缓存，以及如何给它设缓存键 | 40 min |
# | 05 · 死代码消除与动态形状（英文） | 谁删掉了算子，什么能让它留下，静态与动态形状 | 40 min |
# | 06 · 实战指南（英文） | 可运行的检查清单、常见误解与事实、`labkit doctor` | 45 min |
# | 07 · 数据依赖的形状（英文） | unbacked 尺寸、`fullgraph`、`int` 与 `SymInt`、`recompile_limit` | 40 min |
# | 08 · 用自定义算子训练（英文） | `register_autograd`、`opcheck` 与 `gradcheck`、反向图 | 45 min |
# | 09 · 为 GPU kernel 写自定义算子（英文） | `triton_op`、缓存键、CUDA Graphs、`Tag.out`、re-inplacing（重新原地化） | 40 min |
# | 10 · 形状之外（英文） | C++ 风格的注册、错误的 dtype 与 stride、布局标签、autocast、标量输入与输出 | 60 min |
# | 11 · 部署自定义算子：export、AOTInductor、profiler（英文） | `torch.export`、AOTInductor 包、profiler、每次调用的开销 | 35 min |
# | 12 · 选哪种封装：一个 kernel，五种边界（英文） | kernel 外面包哪种边界：被追踪、不透明还是图中断，以及每次调用的开销 | 35 min |
#
# <!-- END map -->
#
# ## labkit 会在你的 Jupyter 内核里改动什么
#
# `import labkit` 不改动 torch 的任何东西。`labkit.setup()` 把每个自定义算子声明的哈希加进 torch 的编译缓存键，这样声明改动后，就不会命中过期的编译产物（笔记本 04），并会明确提示你这一点。`labkit.compile_and_compare` 用输入的副本编译你函数的一份全新副本，默认 `backend="aot_eager"`、`dynamic=False`，不用磁盘缓存；你自己编译过的函数不受影响，仍保持编译状态。

# %% [markdown] en="2418fa88af"
# ## 延伸阅读
#
# - PyTorch 教程：[Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)（英文）
# - [`torch.library` 参考文档](https://docs.pytorch.org/docs/stable/library.html)（`custom_op`、`opcheck`，英文）
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)（英文）
# - [`TORCH_LOGS` 与 `torch._logging.set_logs`](https://docs.pytorch.org/docs/stable/logging.html)（英文）
#
# **下一篇**：01 · 自定义算子与编译流水线。
