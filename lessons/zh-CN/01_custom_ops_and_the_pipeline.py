# %% [markdown] en="baef1a4dac"
# # 01 · 自定义算子与编译流水线
#
# 编译一个调用了你的算子的函数，数一数调用次数：在 torch 2.13 上，编译后的代码运行一次你的 kernel 之前，torch 会先调用你的 *fake kernel* 五次，而且从不交给 fake kernel 任何数据。本笔记本讲的就是这个替身，以及向它发问的 `torch.compile` 三个阶段。
#
# **你将学到**
# - 用 `torch.library.custom_op` 注册算子，并用 `opcheck` 检查它；
# - 编译器为什么需要 fake kernel，缺了它会报什么错；
# - 本实验的心智模型：**Dynamo 图 → AOTAutograd 图 → Inductor 代码**，在一个小模型上走一遍；
# - 在你自己的项目里查看这些阶段：`TORCH_TRACE` 和 `tlparse`。
#
# **时间**：约 35 分钟。**前置**：00 · 从这里开始。

# %% [markdown] en="8c3c1edf47"
# ## 1. 手写一个自定义算子
#
# `torch.library.custom_op` 把一个 Python 函数变成算子，torch 的 dispatcher 通过它的**限定名** `namespace::name` 认识它。类型注解成为算子的 *schema*；`mutates_args` 说明它原地修改哪些参数（这里一个也没有）。

# %% [markdown] en="b5d1be1be6"
# 用 `register_fake` 装饰的函数就是 **fake kernel**（见第 2 节）。先看 torch 自带的检查工具：`torch.library.opcheck` 在示例输入上运行一组测试；传入 `raise_exception=False` 时，它返回每项测试的结果，而不是在第一次失败时就抛出异常。

# %% [markdown] en="62bb412ba3"
# ## 2. `torch.compile` 工作时，谁在调用你的算子
#
# `torch.compile` 并不靠运行模型来弄清它做了什么，而是用 **fake tensor** 来*追踪*它：fake tensor 带有形状、dtype 和设备，却没有数据。内置算子自带一条推算输出形状的规则；`custom_op` 是不透明的，所以 fake kernel 就是这条规则，回答“输出会是什么样子？”。`peek` 记录它的 kernel 和 fake kernel 的每一次调用，以及发起调用的阶段（`labkit.stages.calling_stage`）：

# %% [markdown] en="b0e8ccfdbb"
# Dynamo 在记录图时调用 fake kernel；AOTAutograd 先调用它来弄清图的输出，再调用它来追踪图；Inductor 在生成代码时调用它。只有拿到真实数据时，你的 kernel 才会运行。
#
# ## 3. 没有 fake kernel
#
# 这个算子没有 fake kernel，而它的函数体本来在 fake tensor 上也能正常工作。eager 模式下它能运行；编译时，追踪却停了下来（`labkit.compile_and_compare` 把 torch 报的错作为 `report.error` 返回）：

# %% [markdown] en="47b9dcb737"
# 以上说的是 `custom_op`。用底层方式（`torch.library.Library` 的 `define` 和 `impl`）定义的算子，在 torch 列出的少数几个命名空间（`aten`、`prims`、`vision`、`torchaudio`……）里情况不同：在这些命名空间中，追踪时 fake tensor 会拿全零张量运行你的*真实* kernel。`labkit.ops.library_op` 可以定义这样的算子，下面分别定义在我们自己的命名空间和 `vision` 里：

# %% [markdown] en="4faf8e15cd"
# 别依赖这一点：读取输入数据的 kernel（如掩码、计数）拿到全零输入，会把形状算错。
#
# **出乎意料**：*什么都不*返回、也什么都不修改的算子，同样需要 fake kernel。什么都不返回、但修改了某个参数的算子会自动得到一个：没有输出，被修改的张量保持原有形状。（带 `Tag.inplace` 或 `Tag.out` 标签的算子也是如此，需 torch ≥ 2.13，见笔记本 02；返回 `int` 的算子则要你自己写。）（`labkit.declare` 是本实验对 `custom_op` 的简写；`fake=False` 表示不注册 fake kernel。）

# %% [markdown] en="039a19aa0d"
# ## 4. 一个模型，三个阶段
#
# 本笔记本后面一直使用的模型：一个线性层、我们的 `scale` 算子、一个 ReLU。

# %% [markdown] en="c9331e2194"
# ### 阶段 1 — Dynamo：把你的 Python 记录成图
#
# Dynamo 运行你的 Python 字节码，把每个张量操作记录进一张 FX 图。它会把模块*内联*进来：图中先调用 `torch._C._nn.linear`，线性层的 weight 和 bias 被提升为图的输入（就是那些很长的 `…_linear_parameters_weight_` 名字），然后按名字调用我们的算子，最后是 `relu`。

# %% [markdown] en="79735c051b"
# ### 阶段 2 — AOTAutograd：函数式的 ATen 算子
#
# AOTAutograd 把图 lower 到 ATen，即 torch 的核心算子集（`linear` 变成一个 `permute`——weight 的转置——和一个 `addmm`），把图改写成纯函数式（没有原地更新，见笔记本 02），并删掉没用到的代码。自定义算子仍是**一个不透明节点**：AOTAutograd 看不到它的内部。

# %% [markdown] en="ca6342c3ba"
# ### 阶段 3 — Inductor：生成的代码
#
# Inductor 把图变成代码：调用一个矩阵乘法库（`extern_kernels.addmm`），以 *fallback* 方式调用我们的算子（看不见的代码，它无法跨过去做融合），再为 ReLU 生成一个 C++ kernel（`cpp_fused_…`；在 GPU 上则是 Triton kernel）。下面是 Inductor 生成的模块里的 `call()` 函数：

# %% [markdown] en="d446fa88aa"
# 整条路径画在一张图里；算子的节点在每个阶段都标成黄色：

# %% [markdown] en="bfe8fbb640"
# ## 练习 1：预测算子在哪里消失
#
# `shape_only` 只用到 `scale` 结果的**形状**。输出中不再包含这个算子的**第一个**阶段是哪个？回答 `"dynamo"`、`"aot"` 或 `"inductor"`；如果它一直保留下来并且运行了，回答 `"none"`。（*想一想*：编译器从哪里得到形状？）

# %% [markdown] en="02cb770051"
# ## 练习 2：写一个 fake kernel
#
# `nb01::row_sums` 对每一行求和：`x` 的形状为 `(n, m)` 时，结果的形状为 `(n,)`。补全 `my_row_sums_fake`，让它返回这个形状的*空*张量，dtype 和设备与 `x` 相同。检查会在另一种 dtype 和 meta 设备上试用它，然后运行 `opcheck` 并编译一次。

# %% [markdown] en="844d9e93df"
# ## 在你自己的项目中：`TORCH_TRACE` 和 `tlparse`
#
# torch 自己就会记录每个阶段。把 `TORCH_TRACE` 设为一个文件夹，torch 就会把每次编译的日志写到那里；`tlparse`（`pip install tlparse`）再把日志变成一份 HTML 报告：按编译列出每个阶段的图或代码、缓存命中与未命中、图断开。在 shell 中：
#
# ```
# TORCH_TRACE=/tmp/trace python program.py
# tlparse /tmp/trace/*.log -o /tmp/report
# ```
#
# `labkit.logs.torch_trace_report` 在一个新进程里对一个小程序执行上面的步骤（torch 在启动时读取 `TORCH_TRACE`）：

# %% [markdown] en="2439b1cc4d"
# 报告的索引页按编译（`[0/0]` 是第 0 帧的第一次编译）列出 torch 写出的产物。它的机器可读版本 `compile_directory.json` 列出的是同样的条目：

# %% [markdown] en="8450b25a40"
# 每个条目都是索引页旁边的一个文件。下面是 torch 写出的 AOTAutograd 图，里面有我们的算子：

# %% [markdown] en="9ff3678fc5"
# 想快速看一眼的话，`TORCH_LOGS="graph_code,aot_graphs,output_code"` 会把同样的图打印到 stderr。
#
# ## 要点回顾
#
# - `torch.library.custom_op("ns::name", mutates_args=...)` 注册一个不透明的算子；`opcheck` 负责测试它。
# - 编译器用 **fake tensor** 追踪，并在每个阶段询问你的 fake kernel。返回张量或 `int` 的算子，以及什么都不返回、也什么都不修改的算子，都需要 `register_fake`；声明了写入且什么都不返回的算子，或（torch ≥ 2.13）带 `Tag.inplace` 或 `Tag.out` 标签的算子，torch 会替它提供一个。
# - Dynamo 把你的 Python 记录成图；AOTAutograd 把图 lower 成函数式的 ATen 算子并删除死代码；Inductor 生成代码，并以 fallback 方式调用你的算子。
# - `TORCH_TRACE` + `tlparse` 能展示你自己程序里每次编译的每个阶段。
#
# ## 思考题
#
# 1. 即使算子的函数体就是普通的 torch 代码，torch 为什么还需要 fake kernel？
# 2. 为什么一次编译中 fake kernel 会被调用不止一次？
# 3. 为什么 Inductor 能把 ReLU 融合进生成的 kernel，却不能融合进自定义算子？
# 4. 在练习 1 中，算子的结果明明被用到了（用的是它的形状），为什么它仍然被删掉了？
# 5. 对于 `x[x > 0]` 这样的算子，为什么在全零张量上运行 kernel 会得到错误的 fake 结果？
#
# ## 延伸阅读
#
# - PyTorch 教程：[Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)（英文）
# - [`torch.library` 参考文档](https://docs.pytorch.org/docs/stable/library.html)（`custom_op`、`register_fake`、`opcheck`，英文）
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)（英文）
# - [`tlparse`](https://github.com/pytorch/tlparse) 和 [`torch.compile` 故障排查指南](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)（`TORCH_TRACE`、`TORCH_LOGS`，英文）
# - 笔记本 12 · 选哪种封装（英文）：同一个 kernel 分别包在普通函数、`torch.autograd.Function`、`custom_op`、`Library.define` 和 `ctypes` 调用里，走一遍编译、训练和导出
#
# **下一篇**：02 · `mutates_args`：声明会给这些图带来什么变化。
