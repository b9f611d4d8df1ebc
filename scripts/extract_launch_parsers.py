#!/usr/bin/env python3
"""Extract the argument parsers the launch lines target (lib/io/launch.cpp, docs/launch.md) into
test/data/launch/: every argument's name, kind, default and choices, the rules the frameworks
check between arguments, and torchtitan's llama3 flavors. test/io/launch_check_test.cpp checks
every line `--launch` emits against these files.

Reads the sources from git repositories (bare mirrors will do) at fixed commits, with Python's
ast (nothing is imported or run):

    python3 scripts/extract_launch_parsers.py --megatron DIR --nemo DIR --torchtitan DIR [--out test/data/launch]

DIR: a git directory of NVIDIA/Megatron-LM, NVIDIA/NeMo and pytorch/torchtitan holding the
commits below. The output is deterministic; a re-run on the same commits writes the same bytes.

Files (tab-separated; '#' lines are comments):
  <framework>_arguments.txt  name, kind, default, choices (space-separated; empty: any value)
  <framework>_rules.txt      kind, when, then, source (path:line and the source's words)
  torchtitan_flavors.txt     name, flavor and the model arguments the flavor fixes
Kinds: switch (a flag without a value), int, float, str, bool (True or False), pattern (an int or
a Python list expression, Megatron's moe_freq_type), int-tuple, list:<kind> (one or more values),
truthy (argparse's type=bool: any text but the empty string is True), other (no command-line
spelling the checker knows); a trailing '?' means None is accepted as well.
Rules: `excludes A B`: not both; `requires A B`: A needs B; `forbidden A -`: never to be given
(the parser rejects it, or another setting silently overrides it); `multiple A X%Y`: where A holds,
X's value is a multiple of Y's (Y a product of names and numbers joined by '*'); `atleast A X>=Y`.
A and B are alternatives joined by '|', each of terms joined by '&' (all of them); a term is NAME
(given), !NAME (not given), NAME=VALUE, NAME!=VALUE or NAME>N, compared with the argument's default
where the line leaves it out; a VALUE that is another argument's NAME stands for that argument's
value; A '-' always holds.
"""
import argparse
import ast
import os
import subprocess
import sys

MEGATRON = "NVIDIA/Megatron-LM"
MEGATRON_TAG = "core_v0.15.3"
MEGATRON_COMMIT = "309ffca6a40553362d44fd17efc56b772fa1aa44"
MCORE_FOR_NEMO_TAG = "core_v0.14.0"
MCORE_FOR_NEMO_COMMIT = "23e00ed0963c35382dfe8a5a94fb3cda4d21e133"
NEMO = "NVIDIA/NeMo"
NEMO_COMMIT = "8cfedd7203462cb251a914e700e5605444277561"  # v2.5.0rc0+113, 2025-09-20
TORCHTITAN = "pytorch/torchtitan"
TORCHTITAN_TAG = "v0.2.2"
TORCHTITAN_COMMIT = "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce"


class Source:
    """One repository at one commit."""

    def __init__(self, git_dir, repo, commit, ref=None):
        self.git_dir, self.repo, self.commit = git_dir, repo, commit
        resolved = self.git("rev-parse", (ref or commit) + "^{commit}").strip()
        if resolved != commit:
            sys.exit(f"{git_dir}: {ref or commit} is {resolved}, expected {commit}")
        self.cache = {}

    def git(self, *args):
        return subprocess.run(["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True,
                              text=True).stdout

    def text(self, path):
        if path not in self.cache:
            self.cache[path] = self.git("show", f"{self.commit}:{path}")
        return self.cache[path]

    def tree(self, path):
        return ast.parse(self.text(path))

    def where(self, path, words):
        """path:line and the words, of the first line holding `words`; exits when the source lacks them."""
        for number, line in enumerate(self.text(path).splitlines(), 1):
            if words in line:
                return f"{path}:{number}: {words}"
        sys.exit(f"{self.repo}@{self.commit[:12]} {path}: no line holds {words!r}")


def literal_text(node):
    """A default as the command line would spell it: strings unquoted, None as None."""
    if node is None:
        return "-"
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return "-" + str(node.operand.value)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):  # an enum member: AttnBackend.auto
        return node.attr
    return "-"


def enum_members(tree, class_name, values):
    """The member names (or values) of an enum class in a parsed module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            out = []
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                    out.append(str(stmt.value.value) if values else stmt.targets[0].id)
            return out
    sys.exit(f"no class {class_name}")


# --- Megatron-LM: argparse add_argument calls ----------------------------------------------------

MEGATRON_TYPES = {"int": "int", "float": "float", "str": "str", "bool": "truthy", "moe_freq_type": "pattern",
                  "no_rope_freq_type": "pattern", "tuple_type": "int-tuple"}


def megatron_arguments(src):
    path = "megatron/training/arguments.py"
    tree = src.tree(path)
    attn_backends = enum_members(src.tree("megatron/core/transformer/enums.py"), "AttnBackend", values=False)
    strict = enum_members(src.tree("megatron/core/dist_checkpointing/validation.py"), "StrictHandling", values=True)
    rows = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
        kw = {k.arg: k.value for k in node.keywords}
        action = ast.unparse(kw["action"]).strip("'\"") if "action" in kw else None
        choices = []
        if "choices" in kw:
            c = kw["choices"]
            text = ast.unparse(c)
            if isinstance(c, (ast.List, ast.Tuple)):
                choices = [str(e.value) for e in c.elts]
            elif text == "list(AttnBackend)":  # the type maps a member name to the member
                choices = attn_backends
            elif text == "[e.value for e in StrictHandling]":
                choices = strict
            elif text.startswith("range("):
                lo, hi = (int(ast.literal_eval(a)) for a in c.args)
                choices = [str(i) for i in range(lo, hi)]
            else:
                sys.exit(f"{path}: choices {text} not understood")
        if action in ("store_true", "store_false", "store_const", "argparse.BooleanOptionalAction"):
            kind = "switch"
        else:
            type_text = ast.unparse(kw["type"]) if "type" in kw else "str"
            kind = "str" if type_text.startswith("lambda attn_backend") else MEGATRON_TYPES.get(type_text)
            if kind is None:
                sys.exit(f"{path}: type {type_text} not understood")
            if "nargs" in kw:
                kind = "list:" + kind
        if action == "store_true":
            default = "False"
        elif action == "store_false":
            default = "True"
        else:
            default = literal_text(kw.get("default"))
        for name in names:
            rows[name] = (kind, default, choices)
            if action == "argparse.BooleanOptionalAction":
                rows["--no-" + name[2:]] = (kind, default, choices)
    return rows


# The rules validate_args (megatron/training/arguments.py) and Megatron-Core's TransformerConfig
# check between arguments; each with words of the source line that checks it.
MEGATRON_RULES = [
    ("excludes", "--fp16", "--bf16", "megatron/training/arguments.py", "assert not args.bf16"),
    ("excludes", "--num-layers-per-virtual-pipeline-stage", "--num-virtual-stages-per-pipeline-rank",
     "megatron/training/arguments.py", "'No more than one of the following arguments can be set at the same time: '"),
    ("excludes", "--num-layers-per-virtual-pipeline-stage", "--pipeline-model-parallel-layout",
     "megatron/training/arguments.py", "'No more than one of the following arguments can be set at the same time: '"),
    ("excludes", "--num-virtual-stages-per-pipeline-rank", "--pipeline-model-parallel-layout",
     "megatron/training/arguments.py", "'No more than one of the following arguments can be set at the same time: '"),
    ("excludes", "--num-layers-per-virtual-pipeline-stage",
     "--decoder-first-pipeline-num-layers|--decoder-last-pipeline-num-layers", "megatron/training/arguments.py",
     "'please use --num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree"),
    ("requires", "--num-virtual-stages-per-pipeline-rank", "--pipeline-model-parallel-size>1",
     "megatron/training/arguments.py", "'When interleaved schedule is used, pipeline-model-parallel size '"),
    ("requires", "--overlap-param-gather", "--use-distributed-optimizer|--use-megatron-fsdp",
     "megatron/training/arguments.py", "'--overlap-param-gather only supported with distributed optimizer or megatron fsdp'"),
    ("requires", "--overlap-param-gather", "--overlap-grad-reduce", "megatron/training/arguments.py",
     "'Must use --overlap-param-gather with --overlap-grad-reduce'"),
    ("excludes", "--use-torch-fsdp2", "--pipeline-model-parallel-size>1", "megatron/training/arguments.py",
     "'--use-torch-fsdp2 is not supported with pipeline parallelism'"),
    ("excludes", "--use-torch-fsdp2", "--expert-model-parallel-size>1", "megatron/training/arguments.py",
     "'--use-torch-fsdp2 is not supported with expert parallelism'"),
    ("excludes", "--use-torch-fsdp2", "--use-distributed-optimizer", "megatron/training/arguments.py",
     "\"--use-torch-fsdp2 is not supported with MCore's distributed optimizer\""),
    ("requires", "--use-torch-fsdp2", "--untie-embeddings-and-output-weights", "megatron/training/arguments.py",
     "'--use-torch-fsdp2 requires --untie-embeddings-and-output-weights'"),
    ("excludes", "--use-torch-fsdp2", "--fp16", "megatron/training/arguments.py",
     "'--use-torch-fsdp2 not supported with fp16 yet'"),
    ("requires", "--use-torch-fsdp2", "--ckpt-format=torch_dist|--ckpt-format=torch_dcp",
     "megatron/training/arguments.py", "'--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp'"),
    ("requires", "--overlap-param-gather-with-optimizer-step", "--use-distributed-optimizer",
     "megatron/training/arguments.py", "'--overlap-param-gather-with-optimizer-step only supported with distributed optimizer'"),
    ("requires", "--fp8-param-gather", "--use-distributed-optimizer|--use-torch-fsdp2|--use-megatron-fsdp",
     "megatron/training/arguments.py", "'--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp"),
    ("excludes", "--fp4-format", "--fp8-format", "megatron/training/arguments.py",
     "\"--fp4-format and --fp8-format cannot be used simultaneously. Please choose one.\""),
    ("requires", "--fp4-param-gather", "--fp4-format", "megatron/training/arguments.py",
     "\"--fp4-param-gather must be used together with --fp4-format.\""),
    ("requires", "--use-megatron-fsdp", "--ckpt-format=fsdp_dtensor", "megatron/training/arguments.py",
     "\"Megatron FSDP only supports fsdp_dtensor checkpoint format\""),
    ("excludes", "--use-megatron-fsdp&--data-parallel-sharding-strategy=optim_grads_params",
     "--check-weight-hash-across-dp-replicas-interval", "megatron/training/arguments.py",
     "'check_weight_hash_across_dp_replicas_interval is not supported with optim_grads_params'"),
    ("requires", "--bf16&--accumulate-allreduce-grads-in-fp32", "--main-grads-dtype=fp32",
     "megatron/training/arguments.py", "\"--main-grads-dtype can only be fp32 when --accumulate-allreduce-grads-in-fp32 is set\""),
    # --grad-reduce-in-bf16 silently turns --accumulate-allreduce-grads-in-fp32 off, and acts only with --bf16
    ("excludes", "--grad-reduce-in-bf16", "--accumulate-allreduce-grads-in-fp32", "megatron/training/arguments.py",
     "args.accumulate_allreduce_grads_in_fp32 = False"),
    ("requires", "--grad-reduce-in-bf16", "--bf16", "megatron/training/arguments.py", "if args.grad_reduce_in_bf16:"),
    ("requires", "--fp16-lm-cross-entropy", "--fp16", "megatron/training/arguments.py",
     "'lm cross entropy in fp16 only support in fp16 mode.'"),
    ("requires", "--fp32-residual-connection", "--fp16|--bf16", "megatron/training/arguments.py",
     "'residual connection in fp32 only supported when using fp16 or bf16.'"),
    ("requires", "--moe-grouped-gemm", "--bf16", "megatron/training/arguments.py",
     "'Currently GroupedGEMM for MoE only supports bf16 dtype.'"),
    ("requires", "--distribute-saved-activations", "--recompute-granularity=full&--recompute-method&--tensor-model-parallel-size>1",
     "megatron/training/arguments.py", "'distributed recompute activations is only '"),
    ("excludes", "--recompute-granularity=selective", "--recompute-method", "megatron/training/arguments.py",
     "'recompute method is not yet supported for '"),
    ("requires", "--tp-comm-overlap", "--sequence-parallel&--tensor-model-parallel-size>1",
     "megatron/training/arguments.py", "'Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled'"),
    ("requires", "--expert-model-parallel-size>1", "--num-experts", "megatron/training/arguments.py",
     "\"num_experts must be non None to use expert model parallelism\""),
    ("excludes", "--expert-model-parallel-size>1", "--fp16", "megatron/training/arguments.py",
     "\"Expert parallelism is not supported with fp16 training.\""),
    ("requires", "--ckpt-format=torch_dcp", "--use-torch-fsdp2", "megatron/training/arguments.py",
     "\"--ckpt-format torch_dcp is only tested with FSDP.\""),
    ("requires", "--ckpt-format=fsdp_dtensor", "--use-megatron-fsdp", "megatron/training/arguments.py",
     "\"--ckpt-format fsdp_dtensor is only tested with Megatron FSDP.\""),
    ("requires", "--optimizer-cpu-offload", "--use-precision-aware-optimizer", "megatron/training/arguments.py",
     "\"The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer`, \""),
    ("requires", "--optimizer-cpu-offload&--fp8-param-gather", "--fp8-recipe=delayed", "megatron/training/arguments.py",
     "\"When `--fp8-param-gather` is enabled, the optimizer cpu offload \""),
    ("requires", "--position-embedding-type=mrope", "--mrope-section", "megatron/training/arguments.py",
     "'--mrope-section should be set when using --position-embedding-type mrope.'"),
    ("requires", "--cp-comm-type=a2a+p2p", "--hierarchical-context-parallel-sizes", "megatron/training/arguments.py",
     "\"--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm\""),
    ("excludes", "--cuda-graph-impl!=none", "--recompute-granularity=full", "megatron/training/arguments.py",
     "), 'recompute_granularity must not be full when CUDA Graphs are enabled.'"),
    ("excludes", "--enable-cuda-graph|--external-cuda-graph", "--cuda-graph-impl!=none",
     "megatron/training/arguments.py", "), \"Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl.\""),
    ("excludes", "--enable-cuda-graph", "--external-cuda-graph", "megatron/training/arguments.py",
     "), \"--enable-cuda-graph and --external-cuda-graph cannot be enabled at the same time.\""),
    ("requires", "--load-main-params-from-ckpt", "--no-load-optim", "megatron/training/arguments.py",
     "'--load-main-params-from-ckpt must be used with --no-load-optim.'"),
    ("requires", "--delay-wgrad-compute", "--transformer-impl=transformer_engine", "megatron/training/arguments.py",
     "\"Delaying wgrad compute is only supported with transformer_engine implementation\""),
    ("excludes", "--context-parallel-size>1", "--use-legacy-models", "megatron/training/arguments.py",
     "\"Context parallelism is not supported in legacy models.\""),
    ("excludes", "--num-experts", "--spec", "megatron/training/arguments.py", "\"Model Spec must be None when using MoEs\""),
    ("excludes", "--squared-relu|--quick-geglu", "--swiglu", "megatron/training/arguments.py", "assert not args.swiglu"),
    ("excludes", "--retro-add-retriever", "--sequence-parallel", "megatron/training/arguments.py",
     "\"retro currently does not support sequence parallelism.\""),
    ("excludes", "--deterministic-mode", "--use-flash-attn|--cross-entropy-loss-fusion", "megatron/training/arguments.py",
     "assert not args.use_flash_attn, \"Flash attention can not be used in deterministic mode.\""),
    ("forbidden", "--batch-size", "-", "megatron/training/arguments.py", "assert args.batch_size is None, '--batch-size argument is no longer '"),
    ("forbidden", "--warmup", "-", "megatron/training/arguments.py", "assert args.warmup is None, '--warmup argument is no longer valid, use '"),
    ("forbidden", "--model-parallel-size", "-", "megatron/training/arguments.py",
     "assert args.model_parallel_size is None, '--model-parallel-size is no '"),
    ("forbidden", "--checkpoint-activations", "-", "megatron/training/arguments.py",
     "print('--checkpoint-activations is no longer valid, use --recompute-activations, '"),
    # Megatron-Core's TransformerConfig.__post_init__ (the config validate_args' arguments become)
    ("requires", "--fp8-param-gather", "--fp8-format", "megatron/core/transformer/transformer_config.py",
     "raise ValueError(\"fp8_param must be used together with fp8 mode.\")"),
    ("requires", "--moe-pad-expert-input-to-capacity", "--moe-expert-capacity-factor",
     "megatron/core/transformer/transformer_config.py", "\"moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity\""),
    ("requires", "--recompute-granularity=full", "--recompute-method&--recompute-num-layers",
     "megatron/core/transformer/transformer_config.py", "'recompute_method must be \"block\" or \"uniform\"'"),
    # numbers the parser checks against each other
    ("multiple", "-", "--num-attention-heads%--tensor-model-parallel-size",
     "megatron/core/transformer/transformer_config.py", "if self.num_attention_heads % self.tensor_model_parallel_size != 0:"),
    ("multiple", "--group-query-attention", "--num-query-groups%--tensor-model-parallel-size",
     "megatron/core/transformer/transformer_config.py", "if self.num_query_groups % self.tensor_model_parallel_size != 0:"),
    ("multiple", "--context-parallel-size>1", "--seq-length%2*--context-parallel-size", "megatron/training/arguments.py",
     "'seq-length should be a multiple of 2 * context-parallel-size '"),
    ("atleast", "-", "--max-position-embeddings>=--seq-length", "megatron/training/arguments.py",
     "assert args.max_position_embeddings >= args.seq_length, \\"),
    ("multiple", "--expert-model-parallel-size>1", "--num-experts%--expert-model-parallel-size",
     "megatron/training/arguments.py", "\"Number of experts should be a multiple of expert model parallel_size.\""),
    ("multiple", "!--num-virtual-stages-per-pipeline-rank&!--decoder-first-pipeline-num-layers"
     "&!--decoder-last-pipeline-num-layers&!--account-for-embedding-in-pipeline-split&!--account-for-loss-in-pipeline-split",
     "--num-layers%--pipeline-model-parallel-size", "megatron/training/arguments.py",
     "'Number of layers should be divisible by the pipeline-model-parallel size'"),
]


# --- NeMo 2.0: the override paths of a recipe ------------------------------------------------------

def annotation_kind(node, aliases):
    """(kind, choices) of a dataclass field's or an argument's annotation: Optional, Union and X | Y
    flattened; a Literal's strings are choices; where the union holds one plain kind beside lists or
    objects, that kind (a plain value is a valid one)."""
    members, nullable = [], False

    def flatten(n):
        nonlocal nullable
        t = ast.unparse(n)
        t = aliases.get(t, t)
        n = ast.parse(t, mode="eval").body
        if isinstance(n, ast.Constant) and n.value is None:
            nullable = True
        elif isinstance(n, ast.Subscript) and ast.unparse(n.value) in ("Optional", "Union"):
            if ast.unparse(n.value) == "Optional":
                nullable = True
            for e in (n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]):
                flatten(e)
        elif isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
            flatten(n.left)
            flatten(n.right)
        else:
            members.append(n)

    flatten(node)
    plain, choices = set(), []
    for m in members:
        t = ast.unparse(m)
        if isinstance(m, ast.Subscript) and ast.unparse(m.value) == "Literal":
            elts = m.slice.elts if isinstance(m.slice, ast.Tuple) else [m.slice]
            choices += [str(e.value) for e in elts]
            plain.add("str")
        elif t in ("int", "float", "bool", "str"):
            plain.add(t)
        elif t in ("list[str]", "List[str]") and len(members) == 1:
            plain.add("list:str")
    if plain == {"int", "float"}:
        plain = {"float"}
    kind = plain.pop() if len(plain) == 1 else "other"
    return kind + ("?" if nullable else ""), choices


def none_default(kind, default):
    """A field annotated `str` whose default is None takes None as well (`fp8: str = None`)."""
    is_none = isinstance(default, ast.Constant) and default.value is None
    return kind + "?" if is_none and not kind.endswith("?") else kind


def dataclass_fields(tree, class_name, aliases):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            out = {}
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    if ast.unparse(stmt.annotation).startswith("ClassVar"):
                        continue
                    kind, choices = annotation_kind(stmt.annotation, aliases)
                    default = stmt.value
                    if isinstance(default, ast.Call) and ast.unparse(default.func) == "field":
                        default = next((k.value for k in default.keywords if k.arg == "default"), None)
                    out[stmt.target.id] = (none_default(kind, default), literal_text(default), choices)
            return out
    sys.exit(f"no dataclass {class_name}")


def init_arguments(tree, class_name, aliases):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                    args = f.args.args[1:]
                    defaults = [None] * (len(args) - len(f.args.defaults)) + list(f.args.defaults)
                    out = {}
                    for a, d in zip(args, defaults):
                        kind, choices = annotation_kind(a.annotation, aliases) if a.annotation else ("other", [])
                        out[a.arg] = (none_default(kind, d), literal_text(d), choices)
                    return out
    sys.exit(f"no {class_name}.__init__")


def type_aliases(tree):
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = ast.unparse(node.value)
            if text.startswith("Literal["):
                out[node.targets[0].id] = text
    return out


# Choices a string field's type leaves open but its source names (each choice is checked to be in
# that source file as a quoted string or an enum member).
NEMO_CHOICES = {
    "model.config.recompute_granularity": (["full", "selective"], "mcore", "megatron/core/transformer/transformer_config.py"),
    "model.config.recompute_method": (["uniform", "block"], "mcore", "megatron/core/transformer/transformer_config.py"),
    "model.config.normalization": (["LayerNorm", "RMSNorm"], "mcore", "megatron/core/transformer/transformer_config.py"),
    "model.config.fp8": (["e4m3", "hybrid"], "mcore", "megatron/core/transformer/transformer_config.py"),
    "model.config.fp8_recipe": (["delayed", "tensorwise", "mxfp8", "blockwise"], "mcore", "megatron/core/enums.py"),
    "model.config.cp_comm_type": (["p2p", "a2a", "allgather", "a2a+p2p"], "mcore", "megatron/core/transformer/transformer_config.py"),
    "model.config.moe_token_dispatcher_type": (["allgather", "alltoall", "flex"], "mcore", "megatron/core/transformer/transformer_config.py"),
    "trainer.strategy.ddp.data_parallel_sharding_strategy": (["no_shard", "optim", "optim_grads", "optim_grads_params"],
                                                             "mcore", "megatron/core/distributed/distributed_data_parallel_config.py"),
    "trainer.strategy.save_ckpt_format": (["torch_dist", "zarr", "fsdp_dtensor"], "nemo",
                                          "nemo/lightning/pytorch/strategies/megatron_strategy.py"),
    "trainer.plugins.fp8": (["e4m3", "hybrid"], "mcore", "megatron/core/transformer/transformer_config.py"),
    # the plugin passes it on to the model config's fp8_recipe (update_config_with_dtype_overrides)
    "trainer.plugins.fp8_recipe": (["delayed", "tensorwise", "mxfp8", "blockwise"], "mcore", "megatron/core/enums.py"),
}


def nemo_arguments(nemo, mcore):
    strategy = nemo.tree("nemo/lightning/pytorch/strategies/megatron_strategy.py")
    plugins = nemo.tree("nemo/lightning/pytorch/plugins/mixed_precision.py")
    mock = nemo.tree("nemo/collections/llm/gpt/data/mock.py")
    gpt = nemo.tree("nemo/collections/llm/gpt/model/base.py")
    rows = {}

    def add(prefix, fields):
        for name, row in fields.items():
            rows[prefix + name] = row

    add("trainer.strategy.", init_arguments(strategy, "MegatronStrategy", type_aliases(strategy)))
    add("trainer.plugins.", init_arguments(plugins, "MegatronMixedPrecision", {}))
    add("data.", init_arguments(mock, "MockDataModule", {}))
    model = {}
    for path, cls in (("megatron/core/model_parallel_config.py", "ModelParallelConfig"),
                      ("megatron/core/transformer/transformer_config.py", "TransformerConfig")):
        model.update(dataclass_fields(mcore.tree(path), cls, {}))
    model.update(dataclass_fields(gpt, "GPTConfig", {}))
    add("model.config.", model)
    add("optim.config.", dataclass_fields(mcore.tree("megatron/core/optimizer/optimizer_config.py"), "OptimizerConfig", {}))
    add("trainer.strategy.ddp.", dataclass_fields(
        mcore.tree("megatron/core/distributed/distributed_data_parallel_config.py"), "DistributedDataParallelConfig", {}))
    for name, (choices, repo, path) in NEMO_CHOICES.items():
        text = (mcore if repo == "mcore" else nemo).text(path)
        for c in choices:
            if f'"{c}"' not in text and f"'{c}'" not in text and f"{c} =" not in text:
                sys.exit(f"{path}: choice {c} of {name} not in the source")
        kind, default, _ = rows[name]
        rows[name] = (kind, default, choices)
    return rows, dataclass_fields(plugins, "DtypeConfig", {})


def nemo_rules(nemo, mcore, model_fields, dtype_fields):
    rules = []
    # MegatronStrategy.connect: update_config_with_dtype_overrides sets every DtypeConfig field
    # the model config has from the precision plugin, whatever model.config.* says.
    where = nemo.where("nemo/lightning/pytorch/strategies/megatron_strategy.py",
                       "model.config = update_config_with_dtype_overrides(dtype_config, model.config)")
    for field in sorted(dtype_fields):
        if "model.config." + field in model_fields:
            rules.append(("forbidden", "model.config." + field, "-",
                          where + ": set from the precision plugin (trainer.plugins.*)"))
    # _strategy_lib.set_model_parallel_attributes: likewise every ParallelismConfig field from the strategy
    where = nemo.where("nemo/lightning/pytorch/strategies/megatron_strategy.py",
                       "_maybe_mcore_config = _strategy_lib.set_model_parallel_attributes(model, self.parallelism)")
    parallelism = dataclass_fields(nemo.tree("nemo/lightning/pytorch/strategies/megatron_strategy.py"),
                                   "ParallelismConfig", {})
    for field in sorted(parallelism):
        if "model.config." + field in model_fields and field not in dtype_fields:
            rules.append(("forbidden", "model.config." + field, "-",
                          where + ": set from the strategy (trainer.strategy.*)"))
    table = [
        ("nemo", "excludes", "trainer.strategy.ckpt_load_optimizer=True", "trainer.strategy.ckpt_load_main_params=True",
         "nemo/lightning/pytorch/strategies/megatron_strategy.py",
         "\"ckpt_load_optimizer and ckpt_load_main_params cannot be both set to True.\""),
        ("nemo", "excludes", "trainer.strategy.fsdp=pytorch", "trainer.strategy.fsdp!=None",
         "nemo/lightning/pytorch/strategies/megatron_strategy.py",
         "raise NotImplementedError(\"PyTorch FSDP2 is not supported with MegatronParallel.\")"),
        ("nemo", "requires", "trainer.strategy.fsdp=megatron", "trainer.strategy.save_ckpt_format=fsdp_dtensor",
         "nemo/lightning/pytorch/strategies/megatron_strategy.py",
         "f\"Megatron-FSDP checkpointing is not supported with {self.save_ckpt_format}.\""),
        ("mcore", "requires", "trainer.plugins.fp8_param_gather=True", "trainer.plugins.fp8!=None",
         "megatron/core/transformer/transformer_config.py",
         "raise ValueError(\"fp8_param must be used together with fp8 mode.\")"),
        ("mcore", "requires", "model.config.moe_pad_expert_input_to_capacity=True", "model.config.moe_expert_capacity_factor!=None",
         "megatron/core/transformer/transformer_config.py",
         "\"moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity\""),
        ("mcore", "excludes", "model.config.cpu_offloading=True", "trainer.strategy.pipeline_model_parallel_size>1",
         "megatron/core/transformer/transformer_config.py",
         "\"Currently there is no support for Pipeline parallelism with CPU offloading\""),
        ("mcore", "excludes", "model.config.cpu_offloading=True", "model.config.recompute_granularity!=None",
         "megatron/core/transformer/transformer_config.py",
         "\"CPU offloading does not work when activation recomputation is enabled\""),
        ("mcore", "excludes", "model.config.recompute_granularity=selective", "model.config.recompute_method!=None",
         "megatron/core/transformer/transformer_config.py", "self.recompute_granularity == \"selective\" and self.recompute_num_layers is not None"),
        ("mcore", "multiple", "-", "model.config.num_attention_heads%trainer.strategy.tensor_model_parallel_size",
         "megatron/core/transformer/transformer_config.py",
         "if self.num_attention_heads % self.tensor_model_parallel_size != 0:"),
        ("mcore", "multiple", "-", "model.config.num_query_groups%trainer.strategy.tensor_model_parallel_size",
         "megatron/core/transformer/transformer_config.py", "if self.num_query_groups % self.tensor_model_parallel_size != 0:"),
        ("mcore", "requires", "model.config.recompute_granularity=full",
         "model.config.recompute_method!=None&model.config.recompute_num_layers!=None",
         "megatron/core/transformer/transformer_config.py", "'recompute_method must be \"block\" or \"uniform\"'"),
        # Megatron-LM's check of the same OptimizerConfig fields (NeMo builds the same HybridDeviceOptimizer)
        ("mcore", "requires", "optim.config.optimizer_cpu_offload=True", "optim.config.use_precision_aware_optimizer=True",
         "megatron/training/arguments.py",
         "\"The optimizer cpu offload must be used in conjunction with `--use-precision-aware-optimizer`, \""),
    ]
    for repo, kind, when, then, path, words in table:
        src = nemo if repo == "nemo" else mcore
        prefix = "" if repo == "nemo" else f"{MEGATRON}@{MCORE_FOR_NEMO_TAG} "
        rules.append((kind, when, then, prefix + src.where(path, words)))
    return rules


# --- torchtitan: the JobConfig dataclass tree as tyro makes flags of it ----------------------------

def torchtitan_arguments(src):
    path = "torchtitan/config/job_config.py"
    tree = src.tree(path)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    rows = {}

    def walk(class_name, prefix):
        for stmt in classes[class_name].body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            ann = ast.unparse(stmt.annotation)
            name = prefix + stmt.target.id
            if ann in classes:
                walk(ann, name + ".")
                continue
            kind, choices = annotation_kind(stmt.annotation, {})
            if kind == "bool":
                kind = "switch"  # tyro: --name sets True, --no-name False (the flag form, no value)
            default = stmt.value
            if isinstance(default, ast.Call) and ast.unparse(default.func) == "field":
                default = next((k.value for k in default.keywords if k.arg == "default"), None)
            rows["--" + name] = (kind, literal_text(default), choices)

    walk("JobConfig", "")
    # the values a flag's type leaves open: registered model names, flavors and converters
    models = flavors(src)
    names = sorted({m for m, _ in models})
    rows["--model.name"] = rows["--model.name"][:2] + (names,)
    converters = []
    for line in src.git("grep", "-h", "register_model_converter(", src.commit, "--", "torchtitan/components").splitlines():
        if '"' in line:
            converters.append(line.split('"')[1])
    rows["--model.converters"] = rows["--model.converters"][:2] + (sorted(converters),)
    return rows, models


def flavors(src):
    """(model name, flavor) -> the TransformerModelArgs keywords of each flavor of every model
    package torchtitan/models/<name>/__init__.py that defines a train spec."""
    out = {}
    listing = src.git("ls-tree", "--name-only", f"{src.commit}:torchtitan/models").split()
    for name in sorted(listing):
        init = f"torchtitan/models/{name}/__init__.py"
        try:
            text = src.text(init)
        except subprocess.CalledProcessError:
            continue
        if "def get_train_spec" not in text:
            continue
        for node in ast.parse(text).body:
            if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id.endswith("_args") and isinstance(node.value, ast.Dict)):
                for key, value in zip(node.value.keys, node.value.values):
                    kwargs = {}
                    if isinstance(value, ast.Call):
                        for k in value.keywords:
                            try:
                                kwargs[k.arg] = ast.literal_eval(k.value)
                            except ValueError:
                                kwargs[k.arg] = ast.unparse(k.value)
                    out[(name, key.value)] = kwargs
    return out


def llama3_flavor_rows(src, models):
    """Each llama3 flavor's shape as the launch test compares it with a model: the dataclass
    defaults (model/args.py) with the flavor's keywords, and the SwiGLU hidden size as
    FeedForward computes it (model/model.py)."""
    defaults = dataclass_fields(src.tree("torchtitan/models/llama3/model/args.py"), "TransformerModelArgs", {})
    scaling = dataclass_fields(src.tree("torchtitan/models/llama3/model/args.py"), "RoPEScalingArgs", {})
    model_py = src.text("torchtitan/models/llama3/model/model.py")
    for words in ("hidden_dim = int(2 * hidden_dim / 3)", "hidden_dim = int(ffn_dim_multiplier * hidden_dim)",
                  "hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)", "hidden_dim=4 * model_args.dim"):
        if words not in model_py:
            sys.exit(f"torchtitan/models/llama3/model/model.py: {words!r} not found: FeedForward changed")
    rows = []
    for (name, flavor), kw in sorted(models.items()):
        if name != "llama3":
            continue
        a = {k: v[1] for k, v in defaults.items()}
        a.update({k: str(v) for k, v in kw.items()})
        dim = int(a["dim"])
        hidden = int(2 * (4 * dim) / 3)
        if a["ffn_dim_multiplier"] not in ("-", "None"):
            hidden = int(float(a["ffn_dim_multiplier"]) * hidden)
        multiple = int(a["multiple_of"])
        hidden = multiple * ((hidden + multiple - 1) // multiple)
        kv = a["n_heads"] if a["n_kv_heads"] in ("-", "None") else a["n_kv_heads"]
        rows.append((name, flavor, a["n_layers"], str(dim), a["n_heads"], kv, str(hidden), a["vocab_size"],
                     str(int(float(a["rope_theta"]))), a["norm_eps"], scaling["scaling_factor"][1]))
    return rows


TORCHTITAN_RULES = [
    ("requires", "--parallelism.enable_async_tensor_parallel", "--compile.enable", "torchtitan/distributed/tensor_parallel.py",
     "\"Async TP requires 'model' in --compile.components and --compile.enable\""),
    # DDP (data_parallel_replicate_degree without sharding) only as the one parallelism
    ("requires", "--parallelism.data_parallel_replicate_degree>1&--parallelism.data_parallel_shard_degree=1",
     "--parallelism.tensor_parallel_degree=1&--parallelism.pipeline_parallel_degree=1&--parallelism.context_parallel_degree=1",
     "torchtitan/models/llama3/infra/parallelize.py", "raise RuntimeError(\"DDP has not supported > 1D parallelism\")"),
    ("multiple", "-", "--training.seq_len%--parallelism.tensor_parallel_degree*2*--parallelism.context_parallel_degree",
     "torchtitan/distributed/parallel_dims.py", "return self.tp * (self.cp * 2)"),
    ("requires", "--parallelism.expert_parallel_degree>1",
     "--parallelism.expert_tensor_parallel_degree=1|--parallelism.expert_tensor_parallel_degree=--parallelism.tensor_parallel_degree",
     "torchtitan/distributed/parallel_dims.py", "assert etp == tp or etp == 1, \"Currently we only support ETP=TP or ETP=1\""),
]


# --- output ----------------------------------------------------------------------------------------

def write(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        for line in header:
            f.write(("# " + line).rstrip() + "\n")
        for row in rows:
            f.write("\t".join(row) + "\n")


def argument_rows(rows):
    return [(name, kind, default, " ".join(choices)) for name, (kind, default, choices) in sorted(rows.items())]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--megatron", required=True, help="git directory of NVIDIA/Megatron-LM")
    p.add_argument("--nemo", required=True, help="git directory of NVIDIA/NeMo")
    p.add_argument("--torchtitan", required=True, help="git directory of pytorch/torchtitan")
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "test", "data", "launch"))
    o = p.parse_args()
    megatron = Source(o.megatron, MEGATRON, MEGATRON_COMMIT, MEGATRON_TAG)
    mcore = Source(o.megatron, MEGATRON, MCORE_FOR_NEMO_COMMIT, MCORE_FOR_NEMO_TAG)
    nemo = Source(o.nemo, NEMO, NEMO_COMMIT)
    titan = Source(o.torchtitan, TORCHTITAN, TORCHTITAN_COMMIT, TORCHTITAN_TAG)
    made = "made by scripts/extract_launch_parsers.py (do not edit; re-run it on the commits named)"
    columns = "columns: name, kind, default, choices (kinds and rules: the script's docstring)"

    rows = megatron_arguments(megatron)
    write(os.path.join(o.out, "megatron_arguments.txt"), [
        "Megatron-LM's command-line arguments: every add_argument of megatron/training/arguments.py",
        f"in {MEGATRON} at tag {MEGATRON_TAG} (commit {MEGATRON_COMMIT}), with their kinds and choices",
        "(--attention-backend's choices: the AttnBackend members of megatron/core/transformer/enums.py).",
        made, columns], argument_rows(rows))
    rules = []
    for kind, when, then, path, words in MEGATRON_RULES:
        rules.append((kind, when, then, megatron.where(path, words)))
    for group in mutually_exclusive_groups(megatron.tree("megatron/training/arguments.py")):
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                rules.append(("excludes", a, b, megatron.where("megatron/training/arguments.py",
                                                               "add_mutually_exclusive_group")))
    write(os.path.join(o.out, "megatron_rules.txt"), [
        "The rules Megatron-LM checks between arguments: validate_args of megatron/training/arguments.py,",
        "its mutually exclusive group, and Megatron-Core's TransformerConfig.__post_init__, in",
        f"{MEGATRON} at tag {MEGATRON_TAG} (commit {MEGATRON_COMMIT}).",
        made, "columns: kind, when, then, source"], rules)

    rows, dtype_fields = nemo_arguments(nemo, mcore)
    write(os.path.join(o.out, "nemo_arguments.txt"), [
        "NeMo 2.0 (NeMo-Run) override paths for `nemo llm pretrain --factory RECIPE path=value`:",
        "  trainer.strategy.*      MegatronStrategy.__init__ (nemo/lightning/pytorch/strategies/megatron_strategy.py)",
        "  trainer.plugins.*       MegatronMixedPrecision.__init__ (nemo/lightning/pytorch/plugins/mixed_precision.py)",
        "  data.*                  MockDataModule.__init__ (nemo/collections/llm/gpt/data/mock.py)",
        "  model.config.*          GPTConfig (nemo/collections/llm/gpt/model/base.py), Megatron-Core's TransformerConfig",
        "                          and ModelParallelConfig",
        "  optim.config.*          Megatron-Core's OptimizerConfig",
        "  trainer.strategy.ddp.*  Megatron-Core's DistributedDataParallelConfig",
        f"NeMo: {NEMO} commit {NEMO_COMMIT} (v2.5.0rc0+113, 2025-09-20);",
        f"Megatron-Core: {MEGATRON} tag {MCORE_FOR_NEMO_TAG} (commit {MCORE_FOR_NEMO_COMMIT}).",
        "Kinds from the annotations: NeMo-Run reads True/False, None, numbers and other text as Python would.",
        made, columns], argument_rows(rows))
    model_fields = {n for n in rows if n.startswith("model.config.")}
    write(os.path.join(o.out, "nemo_rules.txt"), [
        "The rules NeMo and Megatron-Core check between the overrides' fields, and the model.config fields",
        "the precision plugin overwrites; sources at the commits of nemo_arguments.txt.",
        made, "columns: kind, when, then, source"], nemo_rules(nemo, mcore, model_fields, dtype_fields))

    rows, models = torchtitan_arguments(titan)
    write(os.path.join(o.out, "torchtitan_arguments.txt"), [
        "torchtitan's command-line flags: --<section>.<field> for every field of the JobConfig dataclass tree",
        f"(tyro makes each a flag; a bool is a flag without a value) in torchtitan/config/job_config.py of {TORCHTITAN}",
        f"at tag {TORCHTITAN_TAG} (commit {TORCHTITAN_COMMIT}); --model.name's choices: the packages of",
        "torchtitan/models with a train spec; --model.converters': the names register_model_converter registers.",
        made, columns], argument_rows(rows))
    write(os.path.join(o.out, "torchtitan_rules.txt"), [
        f"The rules torchtitan checks between flags, in {TORCHTITAN} at tag {TORCHTITAN_TAG} (commit {TORCHTITAN_COMMIT}).",
        made, "columns: kind, when, then, source"],
        [(k, w, t, titan.where(path, words)) for k, w, t, path, words in TORCHTITAN_RULES])
    flavor_rows = [(m, f) for m, f in sorted(models)]
    write(os.path.join(o.out, "torchtitan_flavors.txt"), [
        f"torchtitan's model flavors (--model.name, --model.flavor) in {TORCHTITAN} at tag {TORCHTITAN_TAG}",
        f"(commit {TORCHTITAN_COMMIT}): every flavor of torchtitan/models/<name>/__init__.py, and for llama3 the",
        "shape each fixes (model/args.py defaults with the flavor's keywords; the SwiGLU hidden size as",
        "model/model.py's FeedForward computes it; rope scaling from RoPEScalingArgs, which llama3 always applies).",
        made, "columns: name, flavor[, n_layers, dim, n_heads, n_kv_heads, ffn_hidden, vocab_size, rope_theta,",
        "norm_eps, rope_scaling_factor]"],
        sorted(set(llama3_flavor_rows(titan, models)) | {r for r in flavor_rows if r[0] != "llama3"}))


def mutually_exclusive_groups(tree):
    """The flags of each add_mutually_exclusive_group in a module (by the variable it is bound to)."""
    groups = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "add_mutually_exclusive_group"):
            groups[node.targets[0].id] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
                and isinstance(node.func.value, ast.Name) and node.func.value.id in groups):
            groups[node.func.value.id] += [a.value for a in node.args if isinstance(a, ast.Constant)]
    return [sorted(g) for g in groups.values() if len(g) > 1]


if __name__ == "__main__":
    main()
