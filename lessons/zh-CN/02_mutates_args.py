# %% [markdown] en="c6ec1c0833"
# # 02 · `mutates_args`：这份承诺，以及违背它会弄坏什么
#
# 一个函数先读取 `x`，再调用一个给 `x` 加 1 的算子。eager 下结果是 8；编译之后，同一个函数给出 10，不报错也不警告，因为这个算子从没*声明*过它会写入 `x`（§8）。`mutates_args` 就是这份承诺。本笔记本展示编译器依据这份承诺做了什么，以及每种违背承诺的方式各有什么代价。
#
# **你将学到**
# - 声明修改会改变什么：schema、AOTAutograd 的函数式图、Inductor 的重新原地化（re-inplacing）；
# - `mutates_args="unknown"` 和 `tags=torch.Tag.inplace`；
# - 每种*错误*声明会导致什么：静默出错、报错，或者结果正确但有代价；
# - `opcheck` 能发现哪些错误，又发现不了哪些。
#
# **时间**：约 40 分钟。**前置**：01 · 自定义算子与编译流水线。

# %% [markdown] en="9c18d3215b"
# ## 1. 承诺写在 schema 里
#
# `custom_op` 把函数签名和 `mutates_args` 变成一个 *schema*，也就是算子与编译器之间的契约。`torch.library.infer_schema` 展示同一个 kernel 用两种方式声明时各自的 schema；`labkit.declare` 生成同一个算子，它的 kernel 会统计自己被调用的次数：

# %% [markdown] en="26dbaff814"
# `Tensor(a0!) x` 的意思是：“`x` 属于别名集合 `a0`，算子会**写入**（`!`）它”。除此之外，编译器对你的 kernel 一无所知。
#
# ## 2. AOTAutograd 把调用变成函数式的
#
# AOTAutograd 改写图，让任何算子都不写入任何东西：这样后面的 pass 就能随意重排和融合（§8 会展示这种自由对一次没人声明的写入意味着什么）。这个修改输入的调用变成 `auto_functionalized_v2`，它*返回*新的 `x`；最后由 `copy_` 把它写回你的输入：

# %% [markdown] en="59b7fe7f03"
# ## 3. Inductor 把它重新原地化
#
# 先复制一份 `x` 给算子写，再复制回来，既费内存又费时间。Inductor 发现没有别的代码读取旧的 `x`，于是直接**在你的张量上**调用算子，不做 clone：

# %% [markdown] en="24014a69db"
# ## 4. `mutates_args="unknown"`：所有参数都算被写入，但有代价
#
# 如果你说不清算子写入哪些参数，`"unknown"` 会把所有参数都声明为被写入。这里结果是对的，但每个参数都要付出代价：kernel 只写 `x`，AOTAutograd 却把 `y` 也复制了回去。而且 torch 不允许给会写入参数的算子注册 autograd 公式：

# %% [markdown] en="513e1d5f46"
# 这里是对的，但并非处处都对。`update(x, stats)` 写入 `stats`，不动 `x`。调用方把 `stats` **clone** 出来的一份当作 `x` 传进去，并把两者都返回：

# %% [markdown] en="5b6a0acafd"
# 声明为 `("stats",)` 时，编译后的程序是对的。声明为 `"unknown"` 时，`x` 也算被写入，于是这次调用把一个被写入参数的 clone 当作另一个被写入参数传入，而 03 §4 表明，产生上面这些输出的 Inductor 在这种情形下会算错：上面的输出中，它把输入 `stats` 放在 `x` 的位置、把一个新 buffer 放在 `stats` 的位置来调用算子，返回的 `x` 就是 `stats` 本身，装着新值。原因在于这种调用方式，而不在于多声明了修改：一个确实写入两个参数、也如实声明了的算子，会以同样的方式出错（见下面的检查）；而在 03 §4 中，多声明一个被写入的参数反倒让那个程序保持正确。没有哪种声明能让这种调用变得安全（`labkit.audit` 会实际试一试）；只要清楚写入了哪些参数，就恰好声明这些，不多不少。

# %% [markdown] en="42e7f4faab"
# ## 5. `tags=torch.Tag.inplace`：返回你写入的那个张量
#
# 在 torch 2.13 上，算子可以*返回*它写入的张量，也就是 PyTorch 的原地风格（`x.add_(1)` 返回 `x`），前提是用 `tags=torch.Tag.inplace` 说明这一点。被写入的参数必须是第一个参数，否则 torch 会拒绝这个标签。（更早的版本没有这个标签：见 `docs/torch-versions.md`。）

# %% [markdown] en="a683cda057"
# ## 6. 四种错法，逐一实际运行
#
# `labkit.declare` 允许 kernel 实际做的事（`writes`）与它声明的内容（`mutates_args`）有意不一致。同一个程序（算子不返回值时算 `x * 2`，否则算 `x + op(x)`），四种错误：

# %% [markdown] en="787b53399b"
# - **未声明的修改**：最糟糕的一种，不报错，答案却变了。这个算子不返回值，所以它的调用是死代码，会被删掉（和 00 一样）。§8 展示它出错的另一种方式。
# - **返回它的输入**：在 eager 下就已被拒绝（带 `Tag.inplace` 时合法，见 §5；带 `Tag.out` 时返回 `out=` 也合法，见 09）。
# - **没有 fake kernel**：算子返回张量或 `int` 时，编译会中止（01）；对声明了写入（`mutates_args`）且不返回值的算子，以及带 `Tag.inplace` 或 `Tag.out` 标签的算子，torch 会自动提供一个。
# - **多声明了修改**：这里结果正确，但有代价。见下一节（多声明的写入出错的程序见 §4）。
#
# ## 7. 多声明了修改：结果正确，但作用在输入上的调用再也删不掉了
#
# 同一个算子，先声明为纯函数，再多声明修改，放进一个丢弃其结果的程序里：

# %% [markdown] en="59f8216669"
# 多声明了修改的算子即使没有任何地方用到它也会运行，还为一次根本不会发生的写入引入了函数化（`auto_functionalized_v2`、一个写回的 `copy_`）：这次 kernel 调用本来会被死代码消除删掉。（如果作用在之后没人读取的临时张量上，它的“写入”也是死的，调用就会被删掉。）
#
# ## 8. 结果*被*用到的未声明写入
#
# 这正是开头那个函数。`bump_and_sum` 给 `x` 加 1（未声明），并返回新的和，函数会用到这个和；函数还在调用**之前**读取了 `x`：

# %% [markdown] en="f20415b40f"
# Inductor 以为 `x` 只被读取，所以可以在任意时刻计算 `x * 2`。它把这一步和加法融合成一个在算子**之后**才启动的 kernel：这个 kernel 读到的是新的 `x`。调用并没有被删掉；它运行了，而它未声明的写入改变了其他代码读到的值。下面是各步的执行顺序，取自图和 Inductor 的代码：

# %% [markdown] en="0cb4af9d9c"
# ## 9. 如实声明：结果正确，外加一次 clone
#
# 用 `mutates_args={"x"}` 声明后，同一个函数编译结果正确。看看代价：`x * 2` 仍然需要旧的 `x`，所以 Inductor 不能把你的张量直接交给算子。它先 **clone** 一份 `x`，让算子写入这份 clone：

# %% [markdown] en="f276f1ff20"
# ## 10. 用 `opcheck` 把关
#
# 你写的每个自定义算子都该跑一遍 `torch.library.opcheck` 测试。它的哪个测试能发现哪种错误？每个算子一行：四种错误、一个正确的声明，以及 `hidden_side_effect`，它往一个 Python 列表里追加数据，却什么都没声明（另一类错误）：

# %% [markdown] en="304f034418"
# 未声明的写入能通过 `test_aot_dispatch_dynamic`（见上）。`opcheck` 无法知道一个声明了的写入从未发生，也无法知道一个“纯”算子会往列表里追加数据：这些得靠你自己把关（05 会让一个有真实副作用的算子保留下来；06 中的 `labkit.audit` 会标出多声明的修改）。
#
# ## 11. 声明实验
#
# 选一种声明、一个后端和一种 dynamic 模式：视图会显示 schema、比较结论（输出*和*输入）、kernel 调用、每个阶段的代码，以及 torch 拒绝时给出的消息。

# %% [markdown] en="6cbb6b0caf"
# ## 练习 1：先预测，再检查
#
# 预测 §6 的实验在 **`aot_eager`** 后端上的结果：它在 AOTAutograd 之后就停下，按顺序逐个节点运行图；没有 Inductor，也没有融合。对每一项回答 `"silently wrong"`、`"error"` 或 `"correct"`，然后运行检查。（在上面每种情况中，是哪个*阶段*造成了破坏？）

# %% [markdown] en="b0f202925b"
# ## 练习 2：声明一个有两个参数的算子
#
# `nb02::normalize_` 会原地更新 `x` 和它的滑动统计量 `stats`，**两个**都改。给出一个 `mutates_args`（参数名组成的元组，如 `("x",)`，或 `"unknown"`），使 `opcheck` 的 `test_schema` 通过，且编译后的函数与 eager 一致。

# %% [markdown] en="305580b487"
# ## 在你自己的项目中
#
# torch 自己就能打印这些图：`TORCH_LOGS="aot_graphs,output_code" python my_script.py`。在笔记本里，`torch._logging.set_logs` 做同样的事，`labkit.torch_logs` 则捕获它写出的内容。下面是用原生 torch 写的 §1 的 `raw_bump`：

# %% [markdown] en="616b2e7e71"
# ## 要点回顾
#
# - `mutates_args` 在 schema 里变成 `Tensor(a0!)`；AOTAutograd 把调用变成函数式的（`auto_functionalized_v2` 加一个写回的 `copy_`），Inductor 再把它重新原地化到你的张量上，或者在其他代码仍需要旧值时先 clone。
# - **未声明的**写入：静默出错，分两种情况：调用被当作死代码删掉（结果没被使用），或者其他代码跨过它被融合，读到错误的值（结果被使用）。**多声明了修改**（`"unknown"` 也算）：作用在输入上的调用会被保留；在 §6-§7 中结果正确，但在 torch 2.15 之前，把一个被写入参数的 clone 传到多声明的位置上，结果会出错（§4）。**返回它的输入**：eager 下报错，除非带 `Tag.inplace` 标签（或 `Tag.out`，见 09）。**没有 fake kernel**：编译报错，除非算子声明了写入且不返回值，或者带 `Tag.inplace` 或 `Tag.out` 标签。
# - 运行 `torch.library.opcheck`：它的 `test_schema` 能发现未声明的写入，但发现不了多声明的修改或隐藏的 Python 副作用。
#
# ## 思考题
#
# 1. AOTAutograd 为什么要把一个修改输入的算子变成函数式的 `auto_functionalized_v2` 节点加一个 `copy_`？
# 2. 图是同一张，为什么 `read_then_bump` 在 `aot_eager` 上是对的，在 Inductor 上却错了？
# 3. 为什么如实声明的 `bump_and_sum_declared` 要多一次 clone，而 §3 里的 `bump` 不用？
# 4. 一个算子写入了没有声明的输入，哪个 `opcheck` 测试能发现它，哪些测试会放过它？
# 5. 为什么多声明修改在 §7 中结果正确却有代价？又是什么让 `"unknown"` 在 §4 中出错？
#
# ## 延伸阅读
#
# - PyTorch 教程：[Custom operators landing page](https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)（见其中讲会修改输入的自定义算子的页面，英文）
# - [`torch.library` 参考文档](https://docs.pytorch.org/docs/stable/library.html)（`custom_op`、`mutates_args`、`opcheck`，英文）
# - [The Custom Operators Manual](https://docs.google.com/document/d/1_W62p8WJOQQUzPsJYa7s701JXt0qf2OfLub2sbkHOaU)（英文）
# - 会修改输入的自定义算子的重新原地化：[pytorch #120509](https://github.com/pytorch/pytorch/issues/120509)（功能请求）和 [pytorch PR #134409](https://github.com/pytorch/pytorch/pull/134409)（`auto_functionalized_v2`，为更好地重新原地化而设计）
# - 本笔记本的内容在各个 torch 版本之间有哪些变化：[docs/torch-versions.md](https://github.com/torch-compile-lab/custom-ops-lab/blob/main/docs/torch-versions.md)（英文）
#
# **下一篇**：03 · 别名与视图（英文）。
